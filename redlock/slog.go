package redlock

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/locksmith-go/locksmith/redlock/observe"
)

// logObserver returns an Observer that logs every event to logger, at the
// levels WithLogger documents. Attribute keys are the same in every
// record: op, key (or keys), value, attempt, node, granted, refused,
// errors, quorum, elapsed, validity, held, reason, error. The durations
// (elapsed, validity, held) are time.Duration text, such as "1.5ms", since
// a JSON handler writes a slog.Duration as a bare number of nanoseconds.
func logObserver(logger *slog.Logger) observe.Observer {
	return observe.Observer{
		AttemptDone: func(ctx context.Context, info observe.RoundInfo) {
			level, msg := slog.LevelDebug, "redlock: attempt won the lock"
			if !info.OK {
				level, msg = slog.LevelWarn, "redlock: attempt failed"
			}
			logRound(ctx, logger, level, msg, info)
		},
		Acquired: func(ctx context.Context, info observe.AcquiredInfo) {
			logger.LogAttrs(ctx, slog.LevelDebug, "redlock: lock acquired",
				keysAttr(info.Keys), slog.String("value", info.Value),
				slog.Int("attempts", info.Attempts), durationAttr("elapsed", info.Elapsed))
		},
		NotAcquired: func(ctx context.Context, info observe.NotAcquiredInfo) {
			level := slog.LevelWarn
			if info.Reason == observe.ReasonHeld || info.Reason == observe.ReasonCanceled {
				level = slog.LevelInfo
			}
			logger.LogAttrs(ctx, level, "redlock: lock not acquired",
				keysAttr(info.Keys), slog.String("reason", string(info.Reason)),
				slog.Int("attempts", info.Attempts), durationAttr("elapsed", info.Elapsed),
				slog.Any("error", info.Err))
		},
		Extended: func(ctx context.Context, info observe.RoundInfo) {
			logRound(ctx, logger, slog.LevelDebug, "redlock: lock extended", info)
		},
		ExtendFailed: func(ctx context.Context, info observe.RoundInfo) {
			logRound(ctx, logger, slog.LevelWarn, "redlock: extension failed", info)
		},
		LockLost: func(ctx context.Context, info observe.LockLostInfo) {
			logger.LogAttrs(ctx, slog.LevelError, "redlock: lock lost",
				keysAttr(info.Keys), slog.String("value", info.Value), slog.Any("error", info.Err))
		},
		Released: func(ctx context.Context, info observe.RoundInfo) {
			level, msg := slog.LevelDebug, "redlock: lock released"
			if !info.OK {
				level, msg = slog.LevelWarn, "redlock: release not confirmed"
			}
			logRound(ctx, logger, level, msg, info, durationAttr("held", info.Held))
		},
	}
}

// logRound logs a round's node errors, one record each at Warn, then the
// round with its votes and timings.
func logRound(ctx context.Context, logger *slog.Logger, level slog.Level, msg string, info observe.RoundInfo, extra ...slog.Attr) {
	for _, err := range info.Errors {
		var ne *NodeError
		if errors.As(err, &ne) {
			logger.LogAttrs(ctx, slog.LevelWarn, "redlock: node error",
				slog.String("op", info.Op), keysAttr(info.Keys), slog.Int("node", ne.Node),
				slog.Any("error", ne.Err))
		}
	}
	if !logger.Enabled(ctx, level) {
		return
	}
	attrs := append([]slog.Attr{
		keysAttr(info.Keys), slog.String("value", info.Value),
		slog.Int("granted", info.Granted), slog.Int("refused", info.Refused),
		slog.Int("errors", len(info.Errors)), slog.Int("quorum", info.Quorum),
		durationAttr("elapsed", info.Elapsed),
	}, extra...)
	if info.Attempt > 0 {
		attrs = append(attrs, slog.Int("attempt", info.Attempt))
	}
	if Op(info.Op) != OpUnlock {
		attrs = append(attrs, durationAttr("validity", info.Validity))
	}
	logger.LogAttrs(ctx, level, msg, attrs...)
}

// keysAttr is the lock's resource name as "key", or its names as a list
// under "keys" for a lock over several resources.
func keysAttr(keys []string) slog.Attr {
	if len(keys) == 1 {
		return slog.String("key", keys[0])
	}
	return slog.Any("keys", keys)
}

// durationAttr is d as time.Duration text under key, read alike in every
// handler.
func durationAttr(key string, d time.Duration) slog.Attr {
	return slog.String(key, d.String())
}
