package telemetry

import (
	"fmt"
	"io"
	"os"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
)

// Log formats. Every service, `facho dev` and the facho tools choose theirs
// the same way: FACHO_LOG_FORMAT when set, else console on a terminal and
// JSON anywhere else (a pipe, a file, journald), so a log shipper always
// gets one JSON object per line and a person reads short lines.
const (
	EnvLogFormat     = "FACHO_LOG_FORMAT"
	EnvLogLevel      = "FACHO_LOG_LEVEL"
	LogFormatAuto    = ""
	LogFormatJSON    = "json"
	LogFormatConsole = "console"
)

// ParseLogFormat checks a FACHO_LOG_FORMAT value ("" is auto).
func ParseLogFormat(v string) (string, error) {
	switch v {
	case LogFormatAuto, LogFormatJSON, LogFormatConsole:
		return v, nil
	}
	return "", fmt.Errorf("log format %q: want json or console (unset: console on a terminal, json otherwise)", v)
}

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	return isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())
}

// ResolveLogFormat turns auto into json or console for w.
func ResolveLogFormat(format string, w io.Writer) string {
	if format != LogFormatAuto {
		return format
	}
	if IsTerminal(w) {
		return LogFormatConsole
	}
	return LogFormatJSON
}

// LogWriter is w in the given format: w itself for JSON, zerolog's console
// writer (time, level, message, then the keys; colours only on a terminal)
// for console.
func LogWriter(w io.Writer, format string) io.Writer {
	if ResolveLogFormat(format, w) != LogFormatConsole {
		return w
	}
	return zerolog.ConsoleWriter{Out: w, TimeFormat: "15:04:05", NoColor: !IsTerminal(w)}
}

// NewLoggerFormat returns a logger in the given format (see LogWriter),
// tagged with the service name when service is not empty.
func NewLoggerFormat(w io.Writer, format, service string, level zerolog.Level) zerolog.Logger {
	ctx := zerolog.New(LogWriter(w, format)).Level(level).With().Timestamp()
	if service != "" {
		ctx = ctx.Str(KeyService, service)
	}
	return ctx.Logger()
}

// LoggerFromEnv is the logger of a command that has no flags of its own for
// logging: FACHO_LOG_LEVEL (default def) and FACHO_LOG_FORMAT. A bad value
// is an error naming the variable.
func LoggerFromEnv(getenv func(string) string, w io.Writer, service string, def zerolog.Level) (zerolog.Logger, error) {
	level := def
	if v := getenv(EnvLogLevel); v != "" {
		l, err := zerolog.ParseLevel(v)
		if err != nil {
			return zerolog.Nop(), fmt.Errorf("%s: %w", EnvLogLevel, err)
		}
		level = l
	}
	format, err := ParseLogFormat(getenv(EnvLogFormat))
	if err != nil {
		return zerolog.Nop(), fmt.Errorf("%s: %w", EnvLogFormat, err)
	}
	return NewLoggerFormat(w, format, service, level), nil
}
