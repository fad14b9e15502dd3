// Package config turns command-line flags and MCPMON_* environment variables
// into the Options every mcpmon role runs on. Each flag --foo-bar can also be
// set as MCPMON_FOO_BAR; a flag given on the command line wins over the
// environment. Parse validates everything up front so a bad value stops the
// process with one clear line before anything starts.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/mcpmon/mcpmon/pkg/queue"
)

// Backends.
const (
	QueueEmbedded = "embedded"
	QueueSQS      = "sqs"
	StoreEmbedded = "embedded"
	StoreRedis    = "redis"
)

// Options configure every role. Not every role reads every field.
type Options struct {
	Listen   string
	DataDir  string
	LogLevel string
	LogJSON  bool

	Queue          string
	SQSEndpoint    string
	SQSRegion      string
	SQSPrefix      string
	HighThroughput bool

	Store       string
	RedisURL    string
	RedisPrefix string
	LedgerTTL   time.Duration

	Window              time.Duration
	Grace               time.Duration
	Region              string
	AllowPrivateTargets bool
	ProbeConcurrency    int

	WebhookURL    string
	WebhookSecret string
	SinksFile     string

	// ReplicaID names this process in ledger claims; defaults to host-pid
	// with Redis, EmbeddedReplicaID with the embedded store.
	ReplicaID string
	// ClaimLease is how long an alert claim blocks other replicas; a
	// crashed holder's claim is taken over after it.
	ClaimLease time.Duration
	// Visibility is the consumers' visibility timeout (default 5s, see
	// queue.DefaultVisibility); handlers still running extend it by
	// heartbeat, so it bounds how long a killed replica's message is held.
	Visibility time.Duration
}

// Defaults returns the embedded, single-process defaults of `make run`.
func Defaults() Options {
	return Options{
		Listen:           "127.0.0.1:8080",
		DataDir:          "data",
		LogLevel:         "info",
		Queue:            QueueEmbedded,
		SQSPrefix:        "mcpmon-",
		Store:            StoreEmbedded,
		RedisPrefix:      "mcpmon:",
		LedgerTTL:        7 * 24 * time.Hour,
		Window:           time.Minute,
		Grace:            5 * time.Second,
		Region:           "local",
		ProbeConcurrency: 16,
		ClaimLease:       2 * time.Minute,
		Visibility:       queue.DefaultVisibility,
	}
}

// Register binds every option to fs with the MCPMON_* environment as defaults.
func (o *Options) Register(fs *flag.FlagSet) {
	str := func(p *string, name, usage string) { fs.StringVar(p, name, *p, usage+envHint(name)) }
	dur := func(p *time.Duration, name, usage string) { fs.DurationVar(p, name, *p, usage+envHint(name)) }
	boolean := func(p *bool, name, usage string) { fs.BoolVar(p, name, *p, usage+envHint(name)) }
	str(&o.Listen, "listen", "address for the REST API, /metrics, /healthz and /readyz")
	str(&o.DataDir, "data-dir", "directory for the embedded queue and store")
	str(&o.LogLevel, "log-level", "debug, info, warn or error")
	boolean(&o.LogJSON, "log-json", "log JSON lines instead of text")
	str(&o.Queue, "queue", "queue backend: embedded or sqs")
	str(&o.SQSEndpoint, "sqs-endpoint", "SQS endpoint override (e.g. an emulator); empty uses AWS")
	str(&o.SQSRegion, "sqs-region", "AWS region for SQS; empty uses the AWS config chain")
	str(&o.SQSPrefix, "sqs-prefix", "prefix of the SQS queue names")
	boolean(&o.HighThroughput, "sqs-high-throughput", "create queues in high-throughput FIFO mode (dedup scoped to the message group)")
	str(&o.Store, "store", "store backend: embedded or redis")
	str(&o.RedisURL, "redis-url", "Redis URL: redis://, rediss://, redis+sentinel:// or comma-separated cluster addresses")
	str(&o.RedisPrefix, "redis-prefix", "prefix of every Redis key")
	dur(&o.LedgerTTL, "ledger-ttl", "how long the idempotency ledger remembers a delivered alert")
	dur(&o.Window, "window", "verdict window (e.g. 1m; 2s for demos and tests)")
	dur(&o.Grace, "grace", "how long after a window closes late results are still folded in")
	str(&o.Region, "region", "region label this prober puts on its results")
	boolean(&o.AllowPrivateTargets, "allow-private-targets", "allow probing loopback, private and link-local addresses (tests, private deployments)")
	fs.IntVar(&o.ProbeConcurrency, "probe-concurrency", o.ProbeConcurrency, "probes run in parallel per prober"+envHint("probe-concurrency"))
	str(&o.WebhookURL, "webhook-url", "send alerts to this webhook (secret: never logged)")
	str(&o.WebhookSecret, "webhook-secret", "HMAC-SHA256 secret to sign webhook alerts")
	str(&o.SinksFile, "sinks-file", "JSON file of alert sinks (webhook, slack, pagerduty, opsgenie, email)")
	dur(&o.ClaimLease, "claim-lease", "how long an alert claim blocks other alerter replicas before a crashed holder's claim is taken over")
	dur(&o.Visibility, "visibility-timeout", "consumers' visibility timeout: how soon a killed replica's message returns; running handlers extend it by heartbeat")
	str(&o.ReplicaID, "replica-id", "identity of this replica in ledger claims (default host-pid; \"embedded\" with the embedded store)")
}

func envHint(flagName string) string { return " (env " + EnvName(flagName) + ")" }

// EnvName maps a flag name to its environment variable.
func EnvName(flagName string) string {
	return "MCPMON_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// Parse reads args over the environment and validates the result. Errors are
// one line, naming the flag and what to do.
func Parse(name string, args []string, env func(string) string, stderr io.Writer) (Options, error) {
	o := Defaults()
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	// Errors are one line (the caller prints it); only --help prints usage.
	fs.SetOutput(io.Discard)
	o.Register(fs)
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		if v := env(EnvName(f.Name)); v != "" && envErr == nil {
			if err := f.Value.Set(v); err != nil {
				envErr = fmt.Errorf("%s=%q: %v", EnvName(f.Name), v, err)
			}
		}
	})
	if envErr != nil {
		return o, envErr
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stderr, "usage of %s (every flag can also be set as MCPMON_<FLAG>):\n", name)
			fs.SetOutput(stderr)
			fs.PrintDefaults()
			return o, err
		}
		return o, fmt.Errorf("%v (see --help)", err)
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q (flags go before nothing else; see --help)", fs.Arg(0))
	}
	if o.ReplicaID == "" {
		o.ReplicaID = defaultReplicaID(o.Store)
	}
	return o, o.Validate()
}

// EmbeddedReplicaID is every embedded-store process's identity in ledger
// claims. Only one process can open a data dir (the store file is locked),
// so a restarted process is the same replica: it takes over the claims its
// killed predecessor held at once, instead of every notification of those
// endpoints waiting out --claim-lease behind a claim nobody holds.
const EmbeddedReplicaID = "embedded"

// defaultReplicaID is host-pid, unique among replicas sharing a Redis store;
// EmbeddedReplicaID with the embedded store.
func defaultReplicaID(storeKind string) string {
	if storeKind == StoreEmbedded {
		return EmbeddedReplicaID
	}
	host, _ := os.Hostname()
	return fmt.Sprintf("%s-%d", host, os.Getpid())
}

// Validate checks option values and combinations.
func (o Options) Validate() error {
	var errs []error
	if _, _, err := net.SplitHostPort(o.Listen); err != nil {
		errs = append(errs, fmt.Errorf("--listen %q: want host:port, e.g. 127.0.0.1:8080", o.Listen))
	}
	switch o.Queue {
	case QueueEmbedded:
		if o.DataDir == "" {
			errs = append(errs, errors.New("--data-dir is required with --queue embedded"))
		}
	case QueueSQS:
		if o.SQSEndpoint != "" {
			if u, err := url.Parse(o.SQSEndpoint); err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
				errs = append(errs, fmt.Errorf("--sqs-endpoint %q: want an http(s) URL", o.SQSEndpoint))
			}
		}
	default:
		errs = append(errs, fmt.Errorf("--queue %q: want embedded or sqs", o.Queue))
	}
	switch o.Store {
	case StoreEmbedded:
		if o.DataDir == "" {
			errs = append(errs, errors.New("--data-dir is required with --store embedded"))
		}
	case StoreRedis:
		if o.RedisURL == "" {
			errs = append(errs, errors.New("--store redis needs --redis-url (or MCPMON_REDIS_URL)"))
		}
	default:
		errs = append(errs, fmt.Errorf("--store %q: want embedded or redis", o.Store))
	}
	if o.Window < time.Second {
		errs = append(errs, fmt.Errorf("--window %s: must be at least 1s", o.Window))
	} else if o.Window >= time.Minute && o.Window%time.Minute != 0 || o.Window < time.Minute && time.Minute%o.Window != 0 {
		errs = append(errs, fmt.Errorf("--window %s: must divide a minute (1s..30s) or be whole minutes", o.Window))
	}
	if o.Grace < 0 || o.Grace > o.Window*10 {
		errs = append(errs, fmt.Errorf("--grace %s: must be between 0 and 10 windows", o.Grace))
	}
	if o.LedgerTTL < time.Hour {
		errs = append(errs, fmt.Errorf("--ledger-ttl %s: must be at least 1h (SQS redelivers and DLQ replays arrive long after 5 minutes)", o.LedgerTTL))
	}
	if o.ClaimLease < time.Second || o.ClaimLease > time.Hour {
		errs = append(errs, fmt.Errorf("--claim-lease %s: must be between 1s and 1h", o.ClaimLease))
	}
	if o.Visibility < time.Second || o.Visibility > 12*time.Hour {
		errs = append(errs, fmt.Errorf("--visibility-timeout %s: must be between 1s and 12h (the SQS cap); the default is %s", o.Visibility, queue.DefaultVisibility))
	}
	if o.ProbeConcurrency < 1 {
		errs = append(errs, fmt.Errorf("--probe-concurrency %d: must be at least 1", o.ProbeConcurrency))
	}
	if o.WebhookURL != "" {
		if u, err := url.Parse(o.WebhookURL); err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			// Never echo the URL: it may embed a token.
			errs = append(errs, errors.New("--webhook-url: want an http(s) URL with a host"))
		}
	}
	switch o.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("--log-level %q: want debug, info, warn or error", o.LogLevel))
	}
	if len(errs) > 0 {
		return errs[0] // one line: the first problem
	}
	return nil
}
