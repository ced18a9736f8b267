package slackapproval_test

import (
	"os"
	"testing"

	"github.com/outboxd/outboxd/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
