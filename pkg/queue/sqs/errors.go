package sqs

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/smithy-go"

	"github.com/mcpmon/mcpmon/pkg/queue"
)

// queryPrefix is how SQS's query-compatible error header (and fauxqs)
// qualify codes: "AWS.SimpleQueueService.NonExistentQueue".
const queryPrefix = "AWS.SimpleQueueService."

// ErrThrottled marks a throttling answer that outlasted the SDK's retries;
// queue.Publisher retries it again later.
var ErrThrottled = errors.New("sqs throttled the request")

// sentinel maps an SQS error code (with or without the query prefix) and
// message to a queue sentinel, or nil when none fits.
func sentinel(code, message string) error {
	code = strings.TrimPrefix(code, queryPrefix)
	switch code {
	case "QueueDoesNotExist", "NonExistentQueue":
		return queue.ErrQueueNotFound
	case "ReceiptHandleIsInvalid", "MessageNotInflight", "InvalidReceiptHandle":
		return queue.ErrInvalidReceipt
	case "TooManyEntriesInBatchRequest":
		return queue.ErrTooManyEntries
	case "BatchRequestTooLong":
		return queue.ErrTooLarge
	case "InvalidMessageContents":
		return queue.ErrInvalidMessage
	case "RequestThrottled", "ThrottlingException", "Throttling", "KmsThrottled":
		return ErrThrottled
	case "MissingParameter":
		if strings.Contains(message, "MessageGroupId") {
			return queue.ErrMissingGroupID
		}
		if strings.Contains(message, "MessageDeduplicationId") {
			return queue.ErrMissingDedupID
		}
	case "InvalidParameterValue":
		switch {
		case strings.Contains(message, "ContentBasedDeduplication"), strings.Contains(message, "MessageDeduplicationId"):
			return queue.ErrMissingDedupID
		case strings.Contains(message, "MessageGroupId"):
			return queue.ErrMissingGroupID
		case strings.Contains(message, "shorter than"), strings.Contains(message, "too long"):
			return queue.ErrTooLarge
		}
		return queue.ErrInvalidMessage
	}
	return nil
}

// retryableCode tells the SDK's retryer to retry throttling answers whatever
// their prefix; other errors are left to its default checks.
func retryableCode(err error) aws.Ternary {
	var ae smithy.APIError
	if errors.As(err, &ae) && errors.Is(sentinel(ae.ErrorCode(), ae.ErrorMessage()), ErrThrottled) {
		return aws.TrueTernary
	}
	return aws.UnknownTernary
}

// mapErr wraps an API error of op on queue name with the matching sentinel,
// keeping the AWS code and message for the operator.
func mapErr(op, name string, err error) error {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return fmt.Errorf("sqs %s on %s: %w", op, name, err)
	}
	if s := sentinel(ae.ErrorCode(), ae.ErrorMessage()); s != nil {
		return fmt.Errorf("sqs %s on %s: %w (%s: %s)", op, name, s, ae.ErrorCode(), ae.ErrorMessage())
	}
	return fmt.Errorf("sqs %s on %s: %w", op, name, err)
}

// entryErr is the error of one failed batch entry. Entries failed by the
// server's fault (SenderFault=false) carry no sentinel and are retried.
func entryErr(op, name string, code, message *string, senderFault bool) error {
	c, m := deref(code), deref(message)
	if s := sentinel(c, m); s != nil {
		return fmt.Errorf("sqs %s on %s: %w (%s: %s)", op, name, s, c, m)
	}
	if senderFault {
		return fmt.Errorf("sqs %s on %s: %w (%s: %s)", op, name, queue.ErrInvalidMessage, c, m)
	}
	return fmt.Errorf("sqs %s on %s: entry failed by the server (%s: %s)", op, name, c, m)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
