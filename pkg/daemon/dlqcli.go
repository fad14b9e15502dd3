package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"
)

// notFoundError marks a missing queue or message (exit 3).
type notFoundError struct{ error }

func (e notFoundError) Unwrap() error { return e.error }

// IsNotFound reports whether err names something that does not exist, so
// a script can tell "nothing to replay" from a failure.
func IsNotFound(err error) bool {
	var n notFoundError
	return errors.As(err, &n)
}

const dlqUsage = `usage: mcpmon dlq list
       mcpmon dlq show QUEUE [--limit N]
       mcpmon dlq replay QUEUE [--id ID]...
       mcpmon dlq purge QUEUE --yes
QUEUE is commands (commands-<region> with --regions), results or verdicts. The commands talk to the REST API at
--server (MCPMON_SERVER, default http://127.0.0.1:8080) with the operator's
admin key in MCPMON_TOKEN (or --token). Exit status: 0 ok, 1 error, 2 usage,
3 queue or message not found.`

// idList is a repeatable --id flag.
type idList []string

func (l *idList) String() string     { return strings.Join(*l, ",") }
func (l *idList) Set(v string) error { *l = append(*l, v); return nil }

// DeadLetterCommand implements `mcpmon dlq list|show|replay|purge` as a
// client of /v1/dlq. It uses the standard flag package: go.mod has no CLI
// library and four subcommands do not call for one.
func DeadLetterCommand(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintln(stderr, dlqUsage)
		if len(args) == 0 {
			return usageError{errors.New("want list, show, replay or purge")}
		}
		return nil
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("mcpmon dlq "+sub, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	server := fs.String("server", cmpOr(env("MCPMON_SERVER"), "http://127.0.0.1:8080"), "mcpmon API base URL")
	token := fs.String("token", env("MCPMON_TOKEN"), "admin API key of the default tenant")
	limit := fs.Int("limit", 100, "show: most messages to list")
	yes := fs.Bool("yes", false, "purge: really delete every dead letter")
	var ids idList
	fs.Var(&ids, "id", "replay: only this message ID (repeatable)")
	var queueName string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		queueName, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if queueName == "" && fs.NArg() > 0 {
		queueName = fs.Arg(0)
	} else if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	if sub != "list" && queueName == "" {
		return usageError{fmt.Errorf("%s needs a QUEUE (commands or commands-<region>, results or verdicts)", sub)}
	}
	c := dlqClient{base: strings.TrimRight(*server, "/"), token: *token}
	switch sub {
	case "list":
		var out struct {
			Queues []struct {
				Queue     string `json:"queue"`
				Depth     int    `json:"depth"`
				InFlight  int    `json:"inFlight"`
				OldestAge string `json:"oldestAge"`
			} `json:"queues"`
		}
		if err := c.call(ctx, http.MethodGet, "/v1/dlq", nil, &out); err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "QUEUE\tDEPTH\tIN FLIGHT\tOLDEST")
		for _, q := range out.Queues {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", q.Queue, q.Depth, q.InFlight, cmpOr(q.OldestAge, "-"))
		}
		return tw.Flush()
	case "show":
		var out struct {
			Messages []struct {
				ID           string    `json:"id"`
				GroupID      string    `json:"groupId"`
				SentAt       time.Time `json:"sentAt"`
				ReceiveCount int       `json:"receiveCount"`
				Reason       string    `json:"reason"`
				Body         string    `json:"body"`
			} `json:"messages"`
		}
		if err := c.call(ctx, http.MethodGet, "/v1/dlq/"+url.PathEscape(queueName)+"/messages?limit="+fmt.Sprint(*limit), nil, &out); err != nil {
			return err
		}
		for _, m := range out.Messages {
			fmt.Fprintf(stdout, "%s  group=%s  receives=%d  dead-since=%s  reason=%q\n  %s\n",
				m.ID, m.GroupID, m.ReceiveCount, m.SentAt.Format(time.RFC3339), m.Reason, m.Body)
		}
		return nil
	case "replay":
		var out struct {
			Moved   int      `json:"moved"`
			Missing []string `json:"missing"`
			Task    string   `json:"task"`
		}
		if err := c.call(ctx, http.MethodPost, "/v1/dlq/"+url.PathEscape(queueName)+"/redrive", map[string]any{"ids": []string(ids)}, &out); err != nil {
			return err
		}
		switch {
		case out.Task != "":
			fmt.Fprintf(stdout, "replaying %s's dead letters: SQS move task %s\n", queueName, out.Task)
		default:
			fmt.Fprintf(stdout, "replayed %d message(s) to %s\n", out.Moved, queueName)
		}
		if len(out.Missing) > 0 {
			return notFoundError{fmt.Errorf("not in the dead-letter queue of %s: %s", queueName, strings.Join(out.Missing, ", "))}
		}
		return nil
	case "purge":
		if !*yes {
			return usageError{fmt.Errorf("purge deletes every dead letter of %s for good: add --yes", queueName)}
		}
		var out struct {
			Purged int `json:"purged"`
		}
		if err := c.call(ctx, http.MethodPost, "/v1/dlq/"+url.PathEscape(queueName)+"/purge", map[string]any{}, &out); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "purged %d message(s) from the dead-letter queue of %s\n", out.Purged, queueName)
		return nil
	}
	return usageError{fmt.Errorf("unknown subcommand %q: want list, show, replay or purge", sub)}
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

type dlqClient struct{ base, token string }

// call sends one request and decodes a 2xx answer into out. Errors are one
// line: the problem's detail, or the status.
func (c dlqClient) call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, _ := json.Marshal(in)
		body = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return usageError{fmt.Errorf("--server %q: %w", c.base, err)}
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("reach %s (is mcpmon running? set --server or MCPMON_SERVER): %w", c.base, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if resp.StatusCode >= 300 {
		var p struct{ Detail string }
		detail := resp.Status
		if json.Unmarshal(raw, &p) == nil && p.Detail != "" {
			detail = p.Detail
		}
		err := fmt.Errorf("%s %s: %s", method, path, detail)
		if resp.StatusCode == http.StatusNotFound {
			return notFoundError{err}
		}
		return err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s %s: unreadable answer: %w", method, path, err)
	}
	return nil
}
