package sqs

import (
	"errors"
	"testing"

	"github.com/aws/smithy-go"

	"github.com/mcpmon/mcpmon/pkg/queue"
)

func TestErrorCodesMapToSentinels(t *testing.T) {
	for _, tc := range []struct {
		code, message string
		want          error
	}{
		{"AWS.SimpleQueueService.NonExistentQueue", "The specified queue does not exist.", queue.ErrQueueNotFound},
		{"QueueDoesNotExist", "The specified queue does not exist.", queue.ErrQueueNotFound},
		{"AWS.SimpleQueueService.MessageNotInflight", "", queue.ErrInvalidReceipt},
		{"ReceiptHandleIsInvalid", "", queue.ErrInvalidReceipt},
		{"AWS.SimpleQueueService.TooManyEntriesInBatchRequest", "", queue.ErrTooManyEntries},
		{"AWS.SimpleQueueService.BatchRequestTooLong", "", queue.ErrTooLarge},
		{"InvalidMessageContents", "Invalid characters found.", queue.ErrInvalidMessage},
		{"InvalidParameterValue", "The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly.", queue.ErrMissingDedupID},
		{"MissingParameter", "The request must contain the parameter MessageGroupId.", queue.ErrMissingGroupID},
		{"AWS.SimpleQueueService.RequestThrottled", "", ErrThrottled},
	} {
		err := mapErr("Op", "q.fifo", &smithy.GenericAPIError{Code: tc.code, Message: tc.message})
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.code, err, tc.want)
		}
	}
	if err := mapErr("Op", "q.fifo", &smithy.GenericAPIError{Code: "InternalError"}); queue.Permanent(err) {
		t.Errorf("InternalError mapped to a permanent error: %v", err)
	}
	if err := entryErr("SendMessageBatch", "q.fifo", ptr("InternalError"), ptr("oops"), false); queue.Permanent(err) {
		t.Errorf("server-fault entry mapped to a permanent error: %v", err)
	}
}

func ptr(s string) *string { return &s }
