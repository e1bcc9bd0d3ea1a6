package auditor

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"
)

// fileLog writes entries as JSON lines to a (rotating) writer.
type fileLog struct {
	mu sync.Mutex
	w  io.Writer
}

type fileLine struct {
	Time      string         `json:"time"`
	Level     string         `json:"level"`
	EventType string         `json:"event_type"`
	OLTID     string         `json:"olt_id"`
	Message   string         `json:"message"`
	Details   map[string]any `json:"details,omitempty"`
	Source    string         `json:"source"`
}

func (f *fileLog) write(e Entry) error {
	if f == nil || f.w == nil {
		return nil
	}
	olt := e.OLTID
	if olt == "" {
		olt = "GLOBAL"
	}
	b, err := json.Marshal(fileLine{
		Time: e.Timestamp.UTC().Format(time.RFC3339Nano), Level: e.Level, EventType: e.EventType, OLTID: olt,
		Message: e.Message, Details: e.Details, Source: fmt.Sprintf("%s#%d", e.SourceStream, e.SourceSeq),
	})
	if err != nil {
		return fmt.Errorf("encode coordinator log line: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write coordinator log file: %w", err)
	}
	return nil
}
