package status

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"slices"
	"time"
)

// FeedEntries bounds an endpoint's Atom feed: readers poll it, so its size
// must not grow with an endpoint's history.
const FeedEntries = 50

// FeedContentType is the Atom media type (RFC 4287 §7).
const FeedContentType = "application/atom+xml; charset=utf-8"

// tagPrefix starts every feed and entry ID: a tag URI (RFC 4151) under
// the project's own name, so an ID does not depend on the Host a reader
// used and is the same on every replica.
const tagPrefix = "tag:mcpmon.github.io,2026:"

// FeedEvent is what happened to an incident in one feed entry.
type FeedEvent string

const (
	FeedOpened   FeedEvent = "opened"
	FeedUpdated  FeedEvent = "updated" // the owner posted an update
	FeedResolved FeedEvent = "resolved"
)

// FeedEntry is one incident event as a feed shows it; like Page, it holds
// public fields only.
type FeedEntry struct {
	ID      string // tag URI from the incident's public key and the event
	Event   FeedEvent
	Title   string
	Summary string
	Updated time.Time
	// Link is the entry's alternate: the page of the endpoint whose
	// incident it is, relative to the feed.
	Link string
}

// PublicKey is an opaque, stable public name for an internal ID: a feed
// needs an identity per endpoint and per incident, and the IDs themselves
// name the endpoint's internal ID, which no public response shows.
func PublicKey(id string) string {
	sum := sha256.Sum256([]byte("mcpmon public key\x00" + id))
	return hex.EncodeToString(sum[:10])
}

// FeedEntriesOf is p's incident events, newest first, at most
// FeedEntries: an opening per incident, one entry per owner's update, and a
// resolution per resolved one (Page.Entries, made by Build).
// Entries are built from the page's incident rows alone (every one of the
// last Days days, before the page's cut), so a feed shows nothing the
// page's model does not.
func FeedEntriesOf(p Page) []FeedEntry { return p.Entries }

// incidentEntries are the events of one endpoint's incident rows, in no
// particular order; each links the endpoint's page. An incident's entry IDs
// name the incident alone, so the same event has the same ID in every
// feed that lists it (the endpoint's and each status page's).
func incidentEntries(name, slug string, rows []IncidentRow) []FeedEntry {
	link := "/status/" + slug
	out := make([]FeedEntry, 0, 2*len(rows))
	for _, row := range rows {
		start := row.Start.Format(timeText)
		out = append(out, FeedEntry{
			ID: tagPrefix + "incident/" + row.Key + "/" + string(FeedOpened), Event: FeedOpened, Updated: row.Start, Link: link,
			Title:   fmt.Sprintf("%s: incident opened (%s)", name, row.Cause),
			Summary: fmt.Sprintf("An incident began at %s: %s.", start, row.Cause),
		})
		// Updates are append-only, so an update's position from the oldest
		// names it for good.
		for i, u := range row.Updates {
			n := len(row.Updates) - i
			out = append(out, FeedEntry{
				ID: fmt.Sprintf("%sincident/%s/%s/%d", tagPrefix, row.Key, FeedUpdated, n), Event: FeedUpdated, Updated: u.At, Link: link,
				Title:   fmt.Sprintf("%s: %s", name, u.Word),
				Summary: fmt.Sprintf("Update at %s on the incident that began at %s: %s", u.At.Format(timeText), start, u.Message),
			})
		}
		if row.Ongoing {
			continue
		}
		out = append(out, FeedEntry{
			ID: tagPrefix + "incident/" + row.Key + "/" + string(FeedResolved), Event: FeedResolved, Updated: row.End, Link: link,
			Title: fmt.Sprintf("%s: incident resolved after %s", name, row.DurationText()),
			Summary: fmt.Sprintf("The incident that began at %s (%s) was resolved at %s, after %s.",
				start, row.Cause, row.End.Format(timeText), row.DurationText()),
		})
	}
	return out
}

// newestEntries sorts entries newest first and keeps at most FeedEntries.
func newestEntries(out []FeedEntry) []FeedEntry {
	// At the same instant a resolution sorts above an update, an update
	// above an opening, and the ID breaks any remaining tie, so two renders
	// list entries in one order.
	rank := map[FeedEvent]int{FeedResolved: 0, FeedUpdated: 1, FeedOpened: 2}
	slices.SortFunc(out, func(a, b FeedEntry) int {
		if c := b.Updated.Compare(a.Updated); c != 0 {
			return c
		}
		if c := cmp.Compare(rank[a.Event], rank[b.Event]); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	if len(out) > FeedEntries {
		out = out[:FeedEntries]
	}
	return out
}

const timeText = "2006-01-02 15:04:05 UTC"

// FeedPath is the path of the slug's feed.
func FeedPath(slug string) string { return "/status/" + slug + "/feed.atom" }

type atomFeed struct {
	XMLName   xml.Name    `xml:"http://www.w3.org/2005/Atom feed"`
	ID        string      `xml:"id"`
	Title     string      `xml:"title"`
	Subtitle  string      `xml:"subtitle"`
	Updated   string      `xml:"updated"`
	Links     []atomLink  `xml:"link"`
	Author    atomAuthor  `xml:"author"`
	Generator string      `xml:"generator"`
	Entries   []atomEntry `xml:"entry"`
}

type atomLink struct {
	Rel  string `xml:"rel,attr"`
	Type string `xml:"type,attr"`
	Href string `xml:"href,attr"`
}

type atomAuthor struct {
	Name string `xml:"name"`
}

type atomText struct {
	Type string `xml:"type,attr"`
	Text string `xml:",chardata"`
}

type atomEntry struct {
	ID        string   `xml:"id"`
	Title     string   `xml:"title"`
	Updated   string   `xml:"updated"`
	Published string   `xml:"published"`
	Link      atomLink `xml:"link"`
	Summary   atomText `xml:"summary"`
}

// renderFeed renders p's Atom feed and says its updated time.
func renderFeed(p Page) ([]byte, time.Time, error) {
	return renderAtom(atomHead{
		id: tagPrefix + "endpoint/" + PublicKey(p.id), title: p.Name + " incidents",
		subtitle: "Incidents of " + p.Name + " opened and resolved, newest first.",
		slug:     p.Slug, generated: p.Generated,
	}, FeedEntriesOf(p))
}

// atomHead is what distinguishes one feed from another: its ID, its words,
// and the slug of the page it belongs to (its self and alternate links).
type atomHead struct {
	id, title, subtitle, slug string
	generated                 time.Time
}

// renderAtom renders a feed of entries (newest first) and says its updated
// time. Links are relative to the feed's own URL (RFC 4287 allows IRI
// references), so one rendering serves every Host a deployment answers
// on. The feed's updated time is its newest entry's; an empty feed says
// the page's day, so its body and ETag hold all day.
func renderAtom(h atomHead, entries []FeedEntry) ([]byte, time.Time, error) {
	updated := h.generated.UTC().Truncate(24 * time.Hour)
	if len(entries) > 0 {
		updated = entries[0].Updated
	}
	f := atomFeed{
		ID: h.id, Title: h.title, Subtitle: h.subtitle, Updated: rfc3339(updated),
		Links: []atomLink{{Rel: "self", Type: "application/atom+xml", Href: FeedPath(h.slug)},
			{Rel: "alternate", Type: "text/html", Href: "/status/" + h.slug}},
		Author: atomAuthor{Name: "mcpmon"}, Generator: "mcpmon",
	}
	for _, e := range entries {
		f.Entries = append(f.Entries, atomEntry{ID: e.ID, Title: e.Title, Updated: rfc3339(e.Updated),
			Published: rfc3339(e.Updated), Link: atomLink{Rel: "alternate", Type: "text/html", Href: e.Link},
			Summary: atomText{Type: "text", Text: e.Summary}})
	}
	var b bytes.Buffer
	b.WriteString(xml.Header)
	enc := xml.NewEncoder(&b)
	enc.Indent("", " ")
	if err := enc.Encode(f); err != nil {
		return nil, time.Time{}, fmt.Errorf("render feed of %s: %w", h.slug, err)
	}
	b.WriteByte('\n')
	return b.Bytes(), updated, nil
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }
