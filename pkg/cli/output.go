package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcpmon/mcpmon/pkg/declarative"
	"github.com/mcpmon/mcpmon/pkg/model"
)

// render writes v as -o asks: JSON or YAML of v itself, or the table that
// table writes (to a tabwriter: cells separated by \t).
func (a *app) render(v any, table func(w io.Writer)) error {
	switch a.output {
	case "json":
		enc := json.NewEncoder(a.io.Stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(v)
	case "yaml":
		b, err := declarative.YAML(v)
		if err != nil {
			return err
		}
		_, err = a.io.Stdout.Write(b)
		return err
	}
	tw := tabwriter.NewWriter(a.io.Stdout, 0, 4, 2, ' ', 0)
	table(tw)
	return tw.Flush()
}

// deleteEach deletes the object each ref names with del, which returns
// what it deleted and the confirmation for people. Confirmations go to
// stdout like every command's: with -o table a line per object as it
// goes, with -o json/yaml the list of deleted objects once the walk ends,
// also when it ends on an error, so a script sees what went.
func deleteEach[T any](a *app, refs []string, del func(ref string) (T, string, error)) error {
	done := []T{}
	var err error
	for _, ref := range refs {
		v, line, derr := del(ref)
		if derr != nil {
			err = derr
			break
		}
		done = append(done, v)
		if a.output == "table" {
			fmt.Fprintln(a.io.Stdout, line)
		}
	}
	if a.output != "table" && (err == nil || len(done) > 0) {
		if rerr := a.render(done, nil); err == nil {
			err = rerr
		}
	}
	return err
}

// row writes one table row of cells.
func row(w io.Writer, cells ...any) {
	s := make([]string, len(cells))
	for i, c := range cells {
		s[i] = cell(c)
	}
	fmt.Fprintln(w, strings.Join(s, "\t"))
}

// cell is c as a table cell: every cell of every table and "KEY: value"
// line goes through it, so none carries a control character (a tab or a
// line break would break the table; ESC, BEL, CR could rewrite the
// operator's terminal) or a bidirectional control (text that reads as
// other text): they come out as spaces and U+FFFD (model.OneLine). Names,
// errors and reasons come from targets and agents, not only from users.
func cell(c any) string { return model.OneLine(cellText(c)) }

func cellText(c any) string {
	switch t := c.(type) {
	case string:
		if t == "" {
			return "-"
		}
		return t
	case time.Time:
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format(time.RFC3339)
	case *time.Time:
		if t == nil {
			return "-"
		}
		return cellText(*t)
	case map[string]string:
		if len(t) == 0 {
			return "-"
		}
		parts := make([]string, 0, len(t))
		for _, k := range slices.Sorted(maps.Keys(t)) {
			parts = append(parts, k+"="+t[k])
		}
		return strings.Join(parts, ",")
	case []string:
		if len(t) == 0 {
			return "-"
		}
		return strings.Join(t, ",")
	}
	return fmt.Sprint(c)
}

// fields writes "KEY: value" lines for a single object's table form.
func fields(w io.Writer, kv ...any) {
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(w, "%s:\t%s\n", kv[i], cell(kv[i+1]))
	}
}

// streamJSON writes the items of seq as one indented JSON array, item by
// item, so a long list never sits in memory whole. An error midway leaves
// the array unterminated: a reader cannot mistake it for a full list.
func streamJSON[T any](w io.Writer, seq iter.Seq2[T, error]) error {
	if _, err := io.WriteString(w, "["); err != nil {
		return err
	}
	n := 0
	for v, err := range seq {
		if err != nil {
			fmt.Fprintln(w)
			return err
		}
		b, err := marshalIndent(v)
		if err != nil {
			return err
		}
		sep := ",\n  "
		if n == 0 {
			sep = "\n  "
		}
		if _, err := io.WriteString(w, sep+string(b)); err != nil {
			return err
		}
		n++
	}
	end := "]\n"
	if n > 0 {
		end = "\n]\n"
	}
	_, err := io.WriteString(w, end)
	return err
}

// marshalIndent is one item of a streamed array, indented to sit in it,
// with < > & written as themselves (render's encoder does the same).
func marshalIndent(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("  ", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// renderList writes a paged list as -o asks, walking seq once: a table
// row per item and JSON item by item, so one page is in memory at a time;
// YAML after the walk (the encoder writes a sequence whole). An error
// midway is returned after what was written.
func renderList[T any](a *app, seq iter.Seq2[T, error], header []any, toRow func(T) []any) error {
	switch a.output {
	case "json":
		return streamJSON(a.io.Stdout, seq)
	case "yaml":
		all := []T{}
		for v, err := range seq {
			if err != nil {
				return err
			}
			all = append(all, v)
		}
		return a.render(all, nil)
	}
	// The tabwriter holds the rows until Flush (it aligns the columns over
	// all of them), so a walk that fails prints nothing: no header or half
	// a table on stdout above the error.
	tw := tabwriter.NewWriter(a.io.Stdout, 0, 4, 2, ' ', 0)
	row(tw, header...)
	for v, err := range seq {
		if err != nil {
			return err
		}
		row(tw, toRow(v)...)
	}
	return tw.Flush()
}

// take yields the items of seq that keep accepts (nil: all), at most n of
// them (0: no bound), and stops the walk there: no page past the last one
// needed is fetched.
func take[T any](seq iter.Seq2[T, error], n int, keep func(T) bool) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		got := 0
		for v, err := range seq {
			if err != nil {
				yield(v, err)
				return
			}
			if keep != nil && !keep(v) {
				continue
			}
			if !yield(v, nil) {
				return
			}
			if got++; n > 0 && got == n {
				return
			}
		}
	}
}

// progress writes line(elapsed) to stderr every IO.ProgressEvery until
// the returned stop is called (which waits for the writer to finish), so
// a command waiting on the network or a state is not silent for its whole
// timeout. Stderr, always: stdout stays the result's (-o json), and a CI
// log shows a stuck step as it happens. Nothing within the first period,
// so a quick command's stderr is its error line alone.
func (a *app) progress(line func(elapsed time.Duration) string) (stop func()) {
	start := time.Now()
	t := time.NewTicker(a.io.ProgressEvery)
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fmt.Fprintln(a.io.Stderr, line(time.Since(start).Truncate(a.io.ProgressEvery)))
			}
		}
	}()
	return func() {
		t.Stop()
		close(done)
		<-exited
	}
}

// durationCell is a number of seconds for people: "1h2m3s", "0s".
func durationCell(secs int64) string {
	return (time.Duration(secs) * time.Second).String()
}

// truncate shortens s to at most n runes, marking the cut.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
