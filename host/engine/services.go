package engine

import (
	"context"
	"log/slog"
	"sync"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/judge"
)

// judges is the set of configured judges a run may call.
type judges struct {
	byName map[string]*judge.Judge
	// unavailable maps a configured judge that cannot be called (no key) to
	// the message telling the operator how to configure it.
	unavailable map[string]string
}

// services implements plugin.Services for one metric on one case: it routes
// each judge request to the metric's judge (or the one the request names)
// and sums the usage into the metric's result.
type services struct {
	judges       *judges
	defaultJudge string
	logger       *slog.Logger
	dryRun       *dryRun // estimate: price requests instead of sending them

	mu    sync.Mutex
	usage JudgeUsage
}

func (s *services) Judge(ctx context.Context, reqs []abi.JudgeRequest) []abi.JudgeResponse {
	out := make([]abi.JudgeResponse, len(reqs))
	var wg sync.WaitGroup
	for i := range reqs {
		name := reqs[i].Judge
		if name == "" {
			name = s.defaultJudge
		}
		j := s.judges.byName[name]
		if _, off := s.judges.unavailable[name]; off && s.dryRun == nil {
			j = nil
		}
		if j == nil {
			msg := "no judge named " + name + " is configured"
			if why, ok := s.judges.unavailable[name]; ok {
				msg = why
			}
			out[i] = abi.JudgeResponse{Error: abi.Errorf(abi.CodeJudge, "%s", msg)}
			continue
		}
		wg.Add(1)
		go func(i int, j *judge.Judge) {
			defer wg.Done()
			if s.dryRun != nil {
				out[i] = s.dryRun.respond(ctx, j, reqs[i])
			} else {
				out[i] = j.Do(ctx, reqs[i])
			}
		}(i, j)
	}
	wg.Wait()
	s.mu.Lock()
	for _, r := range out {
		if r.Error == nil || r.Usage.Attempts > 0 {
			s.usage.add(r.Usage)
		}
	}
	s.mu.Unlock()
	return out
}

func (s *services) Log(ctx context.Context, pluginID string, rec abi.LogRecord) {
	level := slog.LevelInfo
	switch rec.Level {
	case "debug":
		level = slog.LevelDebug
	case "warn", "warning":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	}
	attrs := []any{"plugin", pluginID}
	for k, v := range rec.Attrs {
		attrs = append(attrs, k, v)
	}
	s.logger.Log(ctx, level, rec.Message, attrs...)
}

func (s *services) spent() JudgeUsage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.usage
}
