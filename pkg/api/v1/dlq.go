package apiv1

import "time"

// DLQView is one dead-letter queue in GET /v1/dlq.
type DLQView struct {
	// Queue is the stage queue whose dead letters these are.
	Queue    string `json:"queue"`
	Depth    int    `json:"depth"`
	InFlight int    `json:"inFlight"`
	// OldestAge is the age of the oldest dead letter; absent where the
	// backend cannot tell (SQS).
	OldestAge string `json:"oldestAge,omitempty"`
	// Redrive is the latest asynchronous redrive (SQS's message move
	// task); absent where a redrive is done when it returns (embedded).
	Redrive *RedriveStatusView `json:"redrive,omitempty"`
}

// RedriveStatusView is a dead-letter queue's latest asynchronous redrive.
// Status is SQS's (RUNNING, COMPLETED, CANCELLING, CANCELLED, FAILED),
// "none" when the server keeps no task, "unsupported" when it has no move
// tasks (a local emulator: redrives there are done when they return), or
// "unavailable" when it could not be read (logged; e.g. an IAM policy
// without sqs:ListMessageMoveTasks).
type RedriveStatusView struct {
	Status    string     `json:"status"`
	Task      string     `json:"task,omitempty"`
	Moved     int64      `json:"moved,omitempty"`
	ToMove    int64      `json:"toMove,omitempty"`
	StartedAt *time.Time `json:"startedAt,omitempty"`
	Failure   string     `json:"failure,omitempty"`
}

// DeadLetterView is one message in GET /v1/dlq/{queue}/messages. Body is
// the message body as text (stage messages are JSON).
type DeadLetterView struct {
	ID           string    `json:"id"`
	GroupID      string    `json:"groupId"`
	DedupID      string    `json:"dedupId"`
	SentAt       time.Time `json:"sentAt"`
	ReceiveCount int       `json:"receiveCount"`
	Reason       string    `json:"reason,omitempty"`
	Body         string    `json:"body"`
}

// RedriveView is the answer to a redrive.
type RedriveView struct {
	Moved   int      `json:"moved"`
	Missing []string `json:"missing,omitempty"`
	// Task names SQS's asynchronous move task, when it does the move.
	Task string `json:"task,omitempty"`
}
