package alerter_test

import (
	"os"

	"github.com/rs/zerolog"
)

// testLog is silent unless FACHO_TEST_LOG is set.
func testLog() zerolog.Logger {
	if os.Getenv("FACHO_TEST_LOG") != "" {
		return zerolog.New(os.Stderr).With().Timestamp().Logger()
	}
	return zerolog.Nop()
}
