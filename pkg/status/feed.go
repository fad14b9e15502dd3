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
// resolution per resolved one.
// Entries are built from the page's rows alone, so a feed shows nothing the
// page does not.
func FeedEntriesOf(p Page) []FeedEntry {
	out := make([]FeedEntry, 0, 2*len(p.Incidents))
	for _, row := range p.Incidents {
		start := row.Start.Format(timeText)
		out = append(out, FeedEntry{
			ID: tagPrefix + "incident/" + row.Key + "/" + string(FeedOpened), Event: FeedOpened, Updated: row.Start,
			Title:   fmt.Sprintf("%s: incident opened (%s)", p.Name, row.Cause),
			Summary: fmt.Sprintf("An incident began at %s: %s.", start, row.Cause),
		})
		// Updates are append-only, so an update's position from the oldest
		// names it for good.
		for i, u := range row.Updates {
			n := len(row.Updates) - i
			out = append(out, FeedEntry{
				ID: fmt.Sprintf("%sincident/%s/%s/%d", tagPrefix, row.Key, FeedUpdated, n), Event: FeedUpdated, Updated: u.At,
				Title:   fmt.Sprintf("%s: %s", p.Name, u.Word),
				Summary: fmt.Sprintf("Update at %s on the incident that began at %s: %s", u.At.Format(timeText), start, u.Message),
			})
		}
		if row.Ongoing {
			continue
		}
		out = append(out, FeedEntry{
			ID: tagPrefix + "incident/" + row.Key + "/" + string(FeedResolved), Event: FeedResolved, Updated: row.End,
			Title: fmt.Sprintf("%s: incident resolved after %s", p.Name, row.DurationText()),
			Summary: fmt.Sprintf("The incident that began at %s (%s) was resolved at %s, after %s.",
				start, row.Cause, row.End.Format(timeText), row.DurationText()),
		})
	}
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

// renderFeed renders p's Atom feed and says its updated time. Links are relative to the feed's own
// URL (RFC 4287 allows IRI references), so one rendering serves every Host
// a deployment answers on. The feed's updated time is its newest entry's;
// an empty feed says the page's day, so its body and ETag hold all day.
func renderFeed(p Page) ([]byte, time.Time, error) {
	entries := FeedEntriesOf(p)
	updated := p.Generated.UTC().Truncate(24 * time.Hour)
	if len(entries) > 0 {
		updated = entries[0].Updated
	}
	page := atomLink{Rel: "alternate", Type: "text/html", Href: "/status/" + p.Slug}
	f := atomFeed{
		ID: tagPrefix + "endpoint/" + PublicKey(p.id), Title: p.Name + " incidents",
		Subtitle: "Incidents of " + p.Name + " opened and resolved, newest first.",
		Updated:  rfc3339(updated),
		Links:    []atomLink{{Rel: "self", Type: "application/atom+xml", Href: FeedPath(p.Slug)}, page},
		Author:   atomAuthor{Name: "mcpmon"}, Generator: "mcpmon",
	}
	for _, e := range entries {
		f.Entries = append(f.Entries, atomEntry{ID: e.ID, Title: e.Title, Updated: rfc3339(e.Updated),
			Published: rfc3339(e.Updated), Link: page, Summary: atomText{Type: "text", Text: e.Summary}})
	}
	var b bytes.Buffer
	b.WriteString(xml.Header)
	enc := xml.NewEncoder(&b)
	enc.Indent("", " ")
	if err := enc.Encode(f); err != nil {
		return nil, time.Time{}, fmt.Errorf("render feed of %s: %w", p.Slug, err)
	}
	b.WriteByte('\n')
	return b.Bytes(), updated, nil
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }
