// Package layout holds no code: its test enforces the import rules that
// keep the packages' seams where the design puts them (layout_test.go).
package layout
