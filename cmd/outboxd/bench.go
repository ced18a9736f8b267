package main

import "github.com/spf13/cobra"

func newBenchCommand() *cobra.Command {
	return &cobra.Command{Use: "bench", Short: "Measure throughput and latency of the real pipeline", Hidden: true}
}
