package sqs

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/mcpmon/mcpmon/pkg/queue"
)

// TestLatestMoveTaskIsTheRedriveStatus: the latest started of
// ListMessageMoveTasks' tasks gives the DLQ's redrive status (status,
// progress, failure); no task at all is "none".
func TestLatestMoveTaskIsTheRedriveStatus(t *testing.T) {
	started := time.Date(2026, 12, 1, 1, 2, 3, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		tasks []types.ListMessageMoveTasksResultEntry
		want  queue.RedriveStatus
	}{
		{"no task", nil, queue.RedriveStatus{Status: queue.RedriveNone}},
		{"running, newest first", []types.ListMessageMoveTasksResultEntry{
			{Status: aws.String("RUNNING"), TaskHandle: aws.String("h1"), ApproximateNumberOfMessagesMoved: 3,
				ApproximateNumberOfMessagesToMove: aws.Int64(10), StartedTimestamp: started.UnixMilli()},
			{Status: aws.String("COMPLETED"), ApproximateNumberOfMessagesMoved: 7},
		}, queue.RedriveStatus{Status: "RUNNING", Task: "h1", Moved: 3, ToMove: 10, StartedAt: started}},
		{"newest last", []types.ListMessageMoveTasksResultEntry{
			{Status: aws.String("COMPLETED"), ApproximateNumberOfMessagesMoved: 7, StartedTimestamp: started.Add(-time.Hour).UnixMilli()},
			{Status: aws.String("RUNNING"), ApproximateNumberOfMessagesMoved: 1, StartedTimestamp: started.UnixMilli()},
		}, queue.RedriveStatus{Status: "RUNNING", Moved: 1, StartedAt: started}},
		{"failed", []types.ListMessageMoveTasksResultEntry{
			{Status: aws.String("FAILED"), FailureReason: aws.String("AccessDenied"), ApproximateNumberOfMessagesMoved: 1},
		}, queue.RedriveStatus{Status: "FAILED", Moved: 1, Failure: "AccessDenied"}},
		{"status missing", []types.ListMessageMoveTasksResultEntry{{}}, queue.RedriveStatus{Status: "UNKNOWN"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := latestMoveTask(tc.tasks); got != tc.want {
				t.Fatalf("latestMoveTask = %+v, want %+v", got, tc.want)
			}
		})
	}
}
