package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/model"
)

// Endpoints is what the importer needs from mcpmon; pkg/client.Client
// implements it.
type Endpoints interface {
	ListEndpoints(ctx context.Context, selector string) ([]apiv1.EndpointView, error) // every page
	CreateEndpoint(ctx context.Context, in apiv1.EndpointInput) (apiv1.EndpointView, error)
	PatchEndpoint(ctx context.Context, id string, patch any) (apiv1.EndpointView, error) // JSON merge patch body
	DeleteEndpoint(ctx context.Context, id string) error
}

// refusal is an error of Endpoints that says whether mcpmon refused the
// request as invalid (pkg/client.Error: HTTP 400), the entry's own fault
// (a URL on a private address, a header mcpmon does not take). Sending it
// again cannot succeed until the registry entry changes, which bumps its
// updatedAt, so a sync reads it again anyway.
type refusal interface{ Refused() bool }

func refused(err error) bool {
	var r refusal
	return errors.As(err, &r) && r.Refused()
}

// Lister reads a registry; *Client implements it.
type Lister interface {
	List(ctx context.Context, opts ListOptions) ([]ServerResponse, error)
	BaseURL() string
}

var _ Lister = (*Client)(nil)

// Importer imports a registry's remote servers as mcpmon endpoints.
type Importer struct {
	Registry  Lister
	Endpoints Endpoints
	Logger    *slog.Logger // nil discards
}

// Options of one import.
type Options struct {
	// Source is the LabelSource value (default DefaultSource). Two
	// registries imported into one mcpmon need two sources, or a full
	// import of one removes the other's endpoints.
	Source string
	// Since, when set, makes the import a sync: only entries updated
	// after it are read, and only their servers' endpoints reconciled.
	// The caller keeps it between runs: Report.HighWater is the next one.
	Since    time.Time
	Schedule string // of new endpoints; empty: mcpmon's default
	Timeout  string // of new endpoints; empty: mcpmon's default
	// MaxCreate bounds creates per import (0: DefaultMaxCreate; <0: none).
	MaxCreate int
	// DryRun plans and reports without changing mcpmon.
	DryRun bool
}

// ErrEmptyRegistry refuses a full import that would remove every imported
// endpoint because the registry listed nothing: more likely a wrong URL or
// a registry outage than a registry that emptied.
var ErrEmptyRegistry = errors.New("the registry listed no servers")

// Actions of report items.
const (
	ActionCreate = "create"
	ActionUpdate = "update"
	ActionRemove = "remove"
	ActionSkip   = "skip"
)

// Item is one line of a report.
type Item struct {
	Action    string   `json:"action"`
	Server    string   `json:"server,omitempty"`
	Version   string   `json:"version,omitempty"`
	Name      string   `json:"name,omitempty"`
	ID        string   `json:"id,omitempty"`
	Transport string   `json:"transport,omitempty"`
	URL       string   `json:"url,omitempty"`
	Remote    int      `json:"remote,omitempty"`
	Fields    []string `json:"fields,omitempty"`
	Reason    string   `json:"reason,omitempty"`
	// Error, when set, says the action failed (it is then not counted as
	// done).
	Error string `json:"error,omitempty"`
}

// Report says what an import did (or, in a dry run, would do).
type Report struct {
	Registry string    `json:"registry"`
	Mode     string    `json:"mode"` // full | sync
	DryRun   bool      `json:"dryRun"`
	Since    time.Time `json:"since,omitzero"`
	// HighWater is the updated_since of the next sync. It stays at Since
	// when anything failed or was deferred, so the next sync retries it.
	HighWater time.Time `json:"highWater,omitzero"`
	Entries   int       `json:"entries"`
	Created   int       `json:"created"`
	Updated   int       `json:"updated"`
	Removed   int       `json:"removed"`
	Unchanged int       `json:"unchanged"`
	Skipped   int       `json:"skipped"`
	Failed    int       `json:"failed"`
	// Refused counts the failed actions mcpmon refused as invalid (also
	// in Failed). They do not hold HighWater back: retrying cannot help
	// until their entry changes, which the next sync sees.
	Refused int    `json:"refused"`
	Items   []Item `json:"items"`
}

// Import reads the registry, plans and (unless DryRun) applies the plan.
// An error means nothing was applied (registry or mcpmon unreadable), or
// ctx ended part-way (actions not attempted are then reported as failed);
// failures of single actions are in the report (Failed, Item.Error).
func (im *Importer) Import(ctx context.Context, opts Options) (Report, error) {
	log := im.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("component", "registry-import")
	if opts.Source == "" {
		opts.Source = DefaultSource
	}
	rep := Report{Registry: im.Registry.BaseURL(), Mode: "full", DryRun: opts.DryRun, Since: opts.Since, Items: []Item{}}
	full := opts.Since.IsZero()
	if !full {
		rep.Mode = "sync"
	}

	entries, err := im.Registry.List(ctx, ListOptions{UpdatedSince: opts.Since})
	if err != nil {
		return rep, err
	}
	selector := LabelSource + "=" + opts.Source
	existing, err := im.Endpoints.ListEndpoints(ctx, selector)
	if err != nil {
		return rep, fmt.Errorf("listing imported endpoints (selector %s): %w", selector, err)
	}
	if full && len(entries) == 0 && len(existing) > 0 {
		return rep, fmt.Errorf("%w at %s; refusing to remove its %d imported endpoints (check --url; to remove them, delete by selector %s)",
			ErrEmptyRegistry, rep.Registry, len(existing), selector)
	}

	d := DesireFrom(entries, DesireOptions{Source: opts.Source, Delta: !full})
	plan := MakePlan(d, existing, PlanOptions{Full: full, Schedule: opts.Schedule, Timeout: opts.Timeout, MaxCreate: opts.MaxCreate})
	rep.Entries = d.Entries
	log.Info("registry import planned", "mode", rep.Mode, "entries", d.Entries, "create", len(plan.Creates),
		"update", len(plan.Updates), "remove", len(plan.Removes), "skip", len(plan.Skips), "dryRun", opts.DryRun)

	if opts.DryRun {
		rep.add(plan, outcome{})
	} else {
		rep.add(plan, apply(ctx, im.Endpoints, plan, log))
		if err := ctx.Err(); err != nil {
			return rep, err
		}
	}
	// A dry run reports the mark the real run would reach; callers keep
	// only a real run's. An action mcpmon refused as invalid is not retried
	// from the same mark: one entry anyone can publish (a URL on a private
	// address) would otherwise keep every sync at the mark and every Run
	// importing in full for ever.
	rep.HighWater = opts.Since
	if rep.retryable() == 0 && plan.Deferred == 0 && d.HighWater.After(opts.Since) {
		rep.HighWater = d.HighWater
	}
	return rep, nil
}

// outcome is what apply did: each failed action's error by plan position
// ("u0", "c3", "r1") and the IDs of created endpoints by create position.
type outcome struct {
	errs    map[string]error
	created map[int]string
}

// apply carries out the plan. Order: updates, creates, removes. A
// crash (or failure) part-way leaves extra endpoints rather than missing
// ones — a removed endpoint loses its history and leaves a monitoring gap,
// an extra one is removed by the next import (matched by LabelKey), so
// every prefix of this order is repaired by running again.
func apply(ctx context.Context, eps Endpoints, p Plan, log *slog.Logger) outcome {
	out := outcome{errs: map[string]error{}, created: map[int]string{}}
	errs := out.errs
	for i, u := range p.Updates {
		if err := ctx.Err(); err != nil { // not attempted: reported as failed, not done
			errs[fmt.Sprintf("u%d", i)] = err
			continue
		}
		if _, err := eps.PatchEndpoint(ctx, u.ID, u.Patch); err != nil {
			errs[fmt.Sprintf("u%d", i)] = err
			log.Warn("registry import: update failed", "endpoint", u.ID, "server", u.Server, "err", err)
		}
	}
	for i, c := range p.Creates {
		if err := ctx.Err(); err != nil { // not attempted: reported as failed, not done
			errs[fmt.Sprintf("c%d", i)] = err
			continue
		}
		v, err := eps.CreateEndpoint(ctx, c.Input)
		if err != nil {
			errs[fmt.Sprintf("c%d", i)] = err
			log.Warn("registry import: create failed", "name", c.Name, "server", c.Server, "err", err)
			continue
		}
		out.created[i] = v.ID
	}
	for i, r := range p.Removes {
		if err := ctx.Err(); err != nil { // not attempted: reported as failed, not done
			errs[fmt.Sprintf("r%d", i)] = err
			continue
		}
		if err := eps.DeleteEndpoint(ctx, r.ID); err != nil {
			errs[fmt.Sprintf("r%d", i)] = err
			log.Warn("registry import: remove failed", "endpoint", r.ID, "server", r.Server, "err", err)
		}
	}
	return out
}

// add folds the plan and what apply did (nothing in a dry run) into the report.
func (r *Report) add(p Plan, o outcome) {
	errs := o.errs
	done := func(key string, it Item) (Item, bool) {
		if err := errs[key]; err != nil {
			it.Error = err.Error()
			r.Failed++
			if refused(err) {
				r.Refused++
			}
			return it, false
		}
		return it, true
	}
	for i, u := range p.Updates {
		it, ok := done(fmt.Sprintf("u%d", i), Item{Action: ActionUpdate, Server: u.Server, Version: u.Version, Name: u.Name,
			ID: u.ID, Transport: u.Transport, URL: model.RedactURL(u.URL), Fields: u.Fields})
		if ok {
			r.Updated++
		}
		r.Items = append(r.Items, it)
	}
	for i, c := range p.Creates {
		it := Item{Action: ActionCreate, Server: c.Server, Version: c.Version, Name: c.Name,
			Transport: c.Transport, URL: model.RedactURL(c.URL)}
		it.ID = o.created[i]
		it, ok := done(fmt.Sprintf("c%d", i), it)
		if ok {
			r.Created++
		}
		r.Items = append(r.Items, it)
	}
	for i, rm := range p.Removes {
		it, ok := done(fmt.Sprintf("r%d", i), Item{Action: ActionRemove, Server: rm.Server, Name: rm.Name, ID: rm.ID,
			URL: rm.URL, Reason: rm.Reason})
		if ok {
			r.Removed++
		}
		r.Items = append(r.Items, it)
	}
	for _, s := range p.Skips {
		r.Skipped++
		r.Items = append(r.Items, Item{Action: ActionSkip, Server: s.Server, Version: s.Version, Remote: s.Remote,
			URL: model.RedactURL(s.URL), Reason: s.Reason})
	}
	r.Unchanged = p.Unchanged
}

// retryable counts the failed actions that may succeed when sent again.
func (r Report) retryable() int { return r.Failed - r.Refused }

// WriteTable prints the report for people: one line per item, then totals.
func (r Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ACTION\tSERVER\tVERSION\tTRANSPORT\tURL\tDETAIL")
	for _, it := range r.Items {
		action := it.Action
		if r.DryRun && action != ActionSkip {
			action = "would " + action
		}
		detail := it.Reason
		if len(it.Fields) > 0 {
			detail = strings.Join(it.Fields, ",")
		}
		if it.Error != "" {
			action += " FAILED"
			detail = it.Error
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", action, dash(it.Server), dash(it.Version), dash(it.Transport), dash(it.URL), dash(detail))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%s import of %s: %d entries; created %d, updated %d, removed %d, unchanged %d, skipped %d, failed %d\n",
		r.Mode, r.Registry, r.Entries, r.Created, r.Updated, r.Removed, r.Unchanged, r.Skipped, r.Failed)
	return err
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
