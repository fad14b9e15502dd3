package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
)

// Why a message is in a dead-letter queue has one home: the consumer turns
// a handler's error into a reason with FailureReason and hands it to a
// FailureRecorder; peek shows it as DeadLetter.Reason. Where it is kept
// depends on the backend: the embedded broker keeps it on the message
// itself (it moves with it into the DLQ); SQS moves messages to the DLQ on
// its own and a message carries nothing we add after the send, so the SQS
// deployment keeps reasons beside the messages, in the store, by queue and
// message ID (FailureBook) — SQS keeps a message's ID when it dead-letters
// it.

// FailureReason is the reason recorded for a handler's err: ScrubReason'd
// and cut to MaxReasonLen.
func FailureReason(err error) string {
	if err == nil {
		return ""
	}
	return TruncateReason(ScrubReason(err.Error()))
}

var (
	// A URL: webhook and chat URLs carry their keys in the user info, the
	// path or the query, so only scheme and host survive.
	urlPattern = regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.\-]*://[^\s"'<>]*`)
	// A credential after a keyword: "Bearer x", "token=x", "password: x".
	// "Authorization: Bearer x" keeps the scheme and hides x.
	credPattern = regexp.MustCompile(`(?i)\b(bearer|basic|token|api[_-]?key|apikey|secret|password|passwd|signature|sig|authorization)(\s*[=:]\s*|\s+)((?:bearer|basic)\s+)?("[^"]*"|[^\s,;&"']+)`)
)

// ScrubReason removes what may be a secret from an error text: every URL is
// cut to scheme and host, and the value after a credential keyword (bearer,
// token=, api_key=, password:, …) is replaced by <redacted>. It errs on the
// side of hiding; the reason is for an operator, who has the logs' context.
func ScrubReason(s string) string {
	s = urlPattern.ReplaceAllStringFunc(s, scrubURL)
	return credPattern.ReplaceAllString(s, "$1$2$3<redacted>")
}

// scrubURL cuts one URL to scheme://host, with "/…" for a dropped path or
// query; trailing punctuation belongs to the sentence and is kept.
func scrubURL(u string) string {
	trimmed := strings.TrimRight(u, ".,;:!?)]")
	tail := u[len(trimmed):]
	scheme, rest, _ := strings.Cut(trimmed, "://")
	authority, more := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority, more = rest[:i], rest[i:]
	}
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		authority = authority[i+1:]
	}
	if more != "" && more != "/" {
		more = "/…"
	}
	return scheme + "://" + authority + more + tail
}

// FailureReasons reads recorded reasons back, for peeking at a DLQ whose
// messages cannot carry them.
type FailureReasons interface {
	// FailureReasons returns the reasons recorded for the given messages
	// of queueName; a message without one is absent from the map.
	FailureReasons(ctx context.Context, queueName string, messageIDs []string) (map[string]string, error)
}

// FailureForgetter drops a message's reason once it was handled after all,
// so reasons kept beside the messages do not pile up for messages that
// recovered. The consumer calls it for a message handled on a redelivery.
type FailureForgetter interface {
	ForgetFailure(ctx context.Context, queueName, messageID string) error
}

// Documents is the part of the store a FailureBook keeps reasons in;
// store.Objects satisfies it (ErrNotFound from GetObject and DeleteObject
// as model.ErrNotFound).
type Documents interface {
	PutObject(ctx context.Context, kind, id string, doc []byte) error
	GetObject(ctx context.Context, kind, id string) ([]byte, error)
	ListObjects(ctx context.Context, kind string) (map[string][]byte, error)
	DeleteObject(ctx context.Context, kind, id string) error
}

// FailureBook keeps the last failure reason per message in the store, for
// the SQS backend, readable by every API replica. A reason lives as long as
// a dead letter can (DLQRetention): older ones read as absent and are
// deleted when the operator redrives or purges the queue (Sweep), and a
// message handled on a later receive drops its reason (ForgetFailure).
type FailureBook struct {
	docs  Documents
	clock clock.Clock
	ttl   time.Duration
}

var (
	_ FailureRecorder  = (*FailureBook)(nil)
	_ FailureReasons   = (*FailureBook)(nil)
	_ FailureForgetter = (*FailureBook)(nil)
)

// NewFailureBook keeps reasons in docs for DLQRetention, measured on clk
// (nil: real time).
func NewFailureBook(docs Documents, clk clock.Clock) *FailureBook {
	if clk == nil {
		clk = clock.Real{}
	}
	return &FailureBook{docs: docs, clock: clk, ttl: DLQRetention}
}

// reasonKind is the store object kind of one queue's reasons.
func reasonKind(queueName string) string { return "dlq-reason:" + queueName }

type reasonDoc struct {
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// RecordFailure keeps reason (scrubbed and truncated again: the book may
// be fed by other code than the consumer) as messageID's last.
func (b *FailureBook) RecordFailure(ctx context.Context, queueName, messageID, reason string) error {
	doc, err := json.Marshal(reasonDoc{Reason: TruncateReason(ScrubReason(reason)), At: b.clock.Now().UTC()})
	if err != nil {
		return err
	}
	if err := b.docs.PutObject(ctx, reasonKind(queueName), messageID, doc); err != nil {
		return fmt.Errorf("record failure reason of %s message %s: %w", queueName, messageID, err)
	}
	return nil
}

// FailureReasons returns the live reasons of messageIDs, one read each
// (a peek is bounded by its limit).
func (b *FailureBook) FailureReasons(ctx context.Context, queueName string, messageIDs []string) (map[string]string, error) {
	out := map[string]string{}
	now := b.clock.Now()
	for _, id := range messageIDs {
		raw, err := b.docs.GetObject(ctx, reasonKind(queueName), id)
		if errors.Is(err, model.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read failure reason of %s message %s: %w", queueName, id, err)
		}
		var d reasonDoc
		if json.Unmarshal(raw, &d) != nil || now.Sub(d.At) > b.ttl {
			continue
		}
		out[id] = d.Reason
	}
	return out, nil
}

// ForgetFailure drops messageID's reason; none recorded is not an error.
func (b *FailureBook) ForgetFailure(ctx context.Context, queueName, messageID string) error {
	err := b.docs.DeleteObject(ctx, reasonKind(queueName), messageID)
	if err != nil && !errors.Is(err, model.ErrNotFound) {
		return fmt.Errorf("forget failure reason of %s message %s: %w", queueName, messageID, err)
	}
	return nil
}

// Sweep deletes queueName's reasons older than DLQRetention, whose dead
// letters SQS has dropped. It reads every reason of the queue, so it runs
// on operator actions (redrive, purge), not per message.
func (b *FailureBook) Sweep(ctx context.Context, queueName string) (int, error) {
	all, err := b.docs.ListObjects(ctx, reasonKind(queueName))
	if err != nil {
		return 0, fmt.Errorf("sweep failure reasons of %s: %w", queueName, err)
	}
	now, n := b.clock.Now(), 0
	for id, raw := range all {
		var d reasonDoc
		if json.Unmarshal(raw, &d) == nil && now.Sub(d.At) <= b.ttl {
			continue
		}
		if err := b.ForgetFailure(ctx, queueName, id); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
