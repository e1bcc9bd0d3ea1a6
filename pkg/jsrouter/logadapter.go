package jsrouter

import (
	"github.com/ThreeDotsLabs/watermill"
	"github.com/rs/zerolog"
)

// logAdapter lets watermill log through zerolog. watermill's Info is
// mostly lifecycle chatter, so it goes to Debug.
type logAdapter struct{ log zerolog.Logger }

func (l logAdapter) Error(msg string, err error, fields watermill.LogFields) {
	l.log.Error().Err(err).Fields(map[string]any(fields)).Msg(msg)
}

func (l logAdapter) Info(msg string, fields watermill.LogFields) {
	l.log.Debug().Fields(map[string]any(fields)).Msg(msg)
}

func (l logAdapter) Debug(msg string, fields watermill.LogFields) {
	l.log.Trace().Fields(map[string]any(fields)).Msg(msg)
}

func (l logAdapter) Trace(msg string, fields watermill.LogFields) {
	l.log.Trace().Fields(map[string]any(fields)).Msg(msg)
}

func (l logAdapter) With(fields watermill.LogFields) watermill.LoggerAdapter {
	return logAdapter{l.log.With().Fields(map[string]any(fields)).Logger()}
}
