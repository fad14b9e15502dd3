package sqs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/mcpmon/mcpmon/pkg/queue"
)

// SQS queue attribute names mcpmon sets.
const (
	AttrFifoQueue                 = "FifoQueue"
	AttrContentBasedDeduplication = "ContentBasedDeduplication"
	AttrDeduplicationScope        = "DeduplicationScope"
	AttrFifoThroughputLimit       = "FifoThroughputLimit"
	AttrVisibilityTimeout         = "VisibilityTimeout"
	AttrMessageRetentionPeriod    = "MessageRetentionPeriod"
	AttrRedrivePolicy             = "RedrivePolicy"
)

// attrDefaults are SQS's values for attributes a queue may omit when read
// back; a missing attribute equal to its default is not drift.
var attrDefaults = map[string]string{
	AttrContentBasedDeduplication: "false",
	AttrDeduplicationScope:        "queue",
	AttrFifoThroughputLimit:       "perQueue",
}

// QueueSpec is the desired state of one SQS queue.
type QueueSpec struct {
	// Stage is the mcpmon queue name ("results", "results-dlq").
	Stage string
	// Name is the SQS queue name (prefix + stage + ".fifo").
	Name string
	// Attributes are the SQS attributes, RedrivePolicy excluded (it names
	// the DLQ's ARN, known only once the DLQ exists).
	Attributes map[string]string
	// DLQ is the SQS name of the dead-letter queue ("" for a DLQ itself).
	DLQ string
	// MaxReceiveCount is the redrive threshold (0 without a DLQ).
	MaxReceiveCount int
}

// DesiredAttributes returns the SQS attributes for cfg, without
// RedrivePolicy. deploy/cloudformation is checked against this function.
func DesiredAttributes(cfg queue.Config, highThroughput bool) map[string]string {
	scope, limit := string(queue.DedupScopeQueue), "perQueue"
	if cfg.DedupScope == queue.DedupScopeMessageGroup {
		scope = string(queue.DedupScopeMessageGroup)
	}
	if highThroughput {
		scope, limit = string(queue.DedupScopeMessageGroup), "perMessageGroupId"
	}
	a := map[string]string{
		AttrFifoQueue:                 "true",
		AttrContentBasedDeduplication: strconv.FormatBool(cfg.ContentBasedDedup),
		AttrDeduplicationScope:        scope,
		AttrFifoThroughputLimit:       limit,
	}
	if cfg.VisibilityTimeout > 0 {
		a[AttrVisibilityTimeout] = strconv.Itoa(int(seconds(cfg.VisibilityTimeout)))
	}
	if cfg.Retention > 0 {
		a[AttrMessageRetentionPeriod] = strconv.Itoa(int(seconds(cfg.Retention)))
	}
	return a
}

// RedrivePolicy is the RedrivePolicy attribute value sending messages to
// the queue with ARN dlqARN after maxReceiveCount receives.
func RedrivePolicy(dlqARN string, maxReceiveCount int) string {
	b, _ := json.Marshal(struct {
		DeadLetterTargetArn string `json:"deadLetterTargetArn"`
		MaxReceiveCount     int    `json:"maxReceiveCount"`
	}{dlqARN, maxReceiveCount})
	return string(b)
}

// Desired lists the queues for cfgs in creation order: each stage's DLQ
// before the stage queue that redrives into it.
func Desired(prefix string, cfgs []queue.Config, highThroughput bool) []QueueSpec {
	var out []QueueSpec
	for _, cfg := range cfgs {
		spec := QueueSpec{
			Stage:      cfg.Name,
			Name:       QueueName(prefix, cfg.Name),
			Attributes: DesiredAttributes(cfg, highThroughput),
		}
		if cfg.MaxReceiveCount > 0 {
			d := queue.DLQConfig(cfg)
			out = append(out, QueueSpec{
				Stage:      d.Name,
				Name:       QueueName(prefix, d.Name),
				Attributes: DesiredAttributes(d, highThroughput),
			})
			spec.DLQ = QueueName(prefix, d.Name)
			spec.MaxReceiveCount = cfg.MaxReceiveCount
		}
		out = append(out, spec)
	}
	return out
}

// Drift is one attribute of an existing queue that differs from the
// desired value.
type Drift struct {
	Queue     string
	Attribute string
	Want      string
	Got       string
}

func (d Drift) String() string {
	return fmt.Sprintf("%s: %s is %q, want %q", d.Queue, d.Attribute, d.Got, d.Want)
}

// EnsureReport says what Ensure did.
type EnsureReport struct {
	Created []string // SQS names created now
	Existed []string // SQS names already present
	Drift   []Drift  // differences on existing queues (not changed)
}

// Ensure creates, idempotently, the queues for cfgs (normally
// queue.StageConfigs()) and their DLQs with redrive policies, using the
// client's prefix and throughput mode. Existing queues are left as they are;
// attributes that differ from the desired ones are reported as drift, since
// changing dedup or FIFO settings under a running pipeline is a decision for
// an operator.
func Ensure(ctx context.Context, c *Client, cfgs []queue.Config) (EnsureReport, error) {
	var rep EnsureReport
	arns := map[string]string{}
	for _, spec := range Desired(c.opts.Prefix, cfgs, c.opts.HighThroughput) {
		want := maps.Clone(spec.Attributes)
		if spec.DLQ != "" {
			arn, ok := arns[spec.DLQ]
			if !ok {
				return rep, fmt.Errorf("sqs ensure %s: DLQ %s has no ARN", spec.Name, spec.DLQ)
			}
			want[AttrRedrivePolicy] = RedrivePolicy(arn, spec.MaxReceiveCount)
		}
		url, err := c.url(ctx, spec.Name)
		switch {
		case errors.Is(err, queue.ErrQueueNotFound):
			out, err := c.api.CreateQueue(ctx, &awssqs.CreateQueueInput{QueueName: aws.String(spec.Name), Attributes: want})
			if err != nil {
				return rep, mapErr("CreateQueue", spec.Name, err)
			}
			url = aws.ToString(out.QueueUrl)
			c.mu.Lock()
			c.urls[spec.Name] = url
			c.mu.Unlock()
			rep.Created = append(rep.Created, spec.Name)
			c.logger.Info("queue created", "queue", spec.Name)
		case err != nil:
			return rep, err
		default:
			rep.Existed = append(rep.Existed, spec.Name)
		}
		got, err := c.api.GetQueueAttributes(ctx, &awssqs.GetQueueAttributesInput{
			QueueUrl:       aws.String(url),
			AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll},
		})
		if err != nil {
			return rep, mapErr("GetQueueAttributes", spec.Name, err)
		}
		arns[spec.Name] = got.Attributes[string(types.QueueAttributeNameQueueArn)]
		if slices.Contains(rep.Existed, spec.Name) {
			rep.Drift = append(rep.Drift, Compare(spec.Name, want, got.Attributes)...)
		}
	}
	for _, d := range rep.Drift {
		c.logger.Warn("queue attribute drift", "queue", d.Queue, "attribute", d.Attribute, "want", d.Want, "got", d.Got)
	}
	return rep, nil
}

// Compare returns the attributes of want that differ in got, sorted by
// attribute. RedrivePolicy compares as JSON (SQS may render the count as a
// number or a string); a missing attribute equal to SQS's default matches.
func Compare(name string, want, got map[string]string) []Drift {
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []Drift
	for _, k := range keys {
		w := want[k]
		g, ok := got[k]
		if !ok && attrDefaults[k] == w {
			continue
		}
		if k == AttrRedrivePolicy {
			if samePolicy(w, g) {
				continue
			}
		} else if g == w {
			continue
		}
		out = append(out, Drift{Queue: name, Attribute: k, Want: w, Got: g})
	}
	return out
}

func samePolicy(a, b string) bool {
	pa, ok1 := parsePolicy(a)
	pb, ok2 := parsePolicy(b)
	return ok1 && ok2 && pa == pb
}

type policy struct {
	arn   string
	count string
}

func parsePolicy(s string) (policy, bool) {
	var raw map[string]any
	if err := json.Unmarshal([]byte(s), &raw); err != nil {
		return policy{}, false
	}
	arn, _ := raw["deadLetterTargetArn"].(string)
	return policy{arn: arn, count: fmt.Sprint(raw["maxReceiveCount"])}, true
}
