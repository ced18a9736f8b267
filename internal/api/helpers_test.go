package api_test

import (
	"time"

	"github.com/outboxd/outboxd/worker"
)

func workerConfigSweep(interval time.Duration) worker.Config {
	return worker.Config{SweepInterval: interval}
}
