package keys

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/auth"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func TestParse(t *testing.T) {
	tests := []struct {
		args    []string
		want    Command
		wantErr string // substring; "" for success
	}{
		{args: []string{"create", "--name", "ci", "--scope", "Write", "--expires", "720h"}, want: Command{Sub: Create, Name: "ci", Scope: auth.ScopeWrite, Expires: 720 * time.Hour}},
		{args: []string{"create", "--name", "ci", "--scope", "write", "--expires-in", "48h"}, want: Command{Sub: Create, Name: "ci", Scope: auth.ScopeWrite, Expires: 48 * time.Hour}},
		{args: []string{"create", "--name", "ci", "--scope", "read", "--tenant", "acme"}, want: Command{Sub: Create, Name: "ci", Scope: auth.ScopeRead, Tenant: "acme"}},
		{args: []string{"list"}, want: Command{Sub: List}},
		{args: []string{"list", "--tenant", "acme"}, want: Command{Sub: List, Tenant: "acme"}},
		{args: []string{"revoke", "--tenant", "acme", "ci"}, want: Command{Sub: Revoke, Tenant: "acme", Ref: "ci"}},
		{args: []string{"revoke", "ci", "--tenant", "acme"}, want: Command{Sub: Revoke, Tenant: "acme", Ref: "ci"}}, // flags after the ID too
		{args: nil, wantErr: "keys create"},
		{args: []string{"rotate"}, wantErr: "keys create"},
		{args: []string{"-h"}, wantErr: "keys create"}, // no subcommand yet
		{args: []string{"create", "--name", "x"}, wantErr: "--scope"},
		{args: []string{"create", "--scope", "read"}, wantErr: "--name"},
		{args: []string{"create", "--name", "x", "--scope", "root"}, wantErr: "--scope"},
		{args: []string{"create", "--name", "x", "--scope", "read", "--expires", "-1h"}, wantErr: "--expires-in: must be positive"},
		{args: []string{"create", "--name", "x", "--scope", "read", "extra"}, wantErr: `unexpected argument "extra"`},
		{args: []string{"list", "ci"}, wantErr: `keys list: unexpected argument "ci"`},
		{args: []string{"list", "--name", "ci"}, wantErr: "flag provided but not defined: -name"},
		{args: []string{"revoke"}, wantErr: "one key ID or name"},
		{args: []string{"revoke", "a", "b"}, wantErr: "one key ID or name"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			got, err := Parse(tt.args, nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Parse = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

// TestParseTakesTheCallersFlags: flags register adds are parsed with the
// command's, before and after the ID; an error from register stops the
// parse; -h asks for help.
func TestParseTakesTheCallersFlags(t *testing.T) {
	var dataDir string
	reg := func(fs *flag.FlagSet) error {
		fs.StringVar(&dataDir, "data-dir", "", "")
		return nil
	}
	c, err := Parse([]string{"revoke", "--data-dir", "a", "ci", "--data-dir", "b"}, reg)
	if err != nil || c.Ref != "ci" || dataDir != "b" {
		t.Fatalf("Parse = %+v, %v, data-dir %q; want ref ci and the last --data-dir", c, err, dataDir)
	}
	boom := errors.New("MCPMON_STORE: bad")
	if _, err := Parse([]string{"list"}, func(*flag.FlagSet) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want register's", err)
	}
	if _, err := Parse([]string{"list", "-h"}, reg); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("list -h: err = %v, want flag.ErrHelp", err)
	}
}

func TestNewKeyExpiresFromNow(t *testing.T) {
	c := Command{Sub: Create, Name: "ci", Scope: auth.ScopeRead, Tenant: "acme", Expires: time.Hour}
	if nk := c.NewKey(t0); nk != (auth.NewKey{Name: "ci", Tenant: "acme", Scope: auth.ScopeRead, Expires: t0.Add(time.Hour)}) {
		t.Fatalf("NewKey = %+v", nk)
	}
	c.Expires = 0
	if nk := c.NewKey(t0); !nk.Expires.IsZero() {
		t.Fatalf("a key without --expires expires at %s", nk.Expires)
	}
}

// fakeKeyring records what Run asked for and answers with fixed keys.
type fakeKeyring struct {
	created auth.NewKey
	list    []auth.Key
	revoked [2]string
	err     error
}

func (f *fakeKeyring) Create(_ context.Context, nk auth.NewKey) (string, auth.Key, error) {
	f.created = nk
	return "mcpmon_secret", auth.Key{ID: "0123456789abcdef", Name: nk.Name, Tenant: nk.Tenant, Scope: nk.Scope, Expires: nk.Expires}, f.err
}

func (f *fakeKeyring) List(_ context.Context, tenant string) ([]auth.Key, error) {
	return f.list, f.err
}

func (f *fakeKeyring) Revoke(_ context.Context, tenant, ref string) (auth.Key, error) {
	f.revoked = [2]string{tenant, ref}
	return auth.Key{ID: "0123456789abcdef", Name: ref, Tenant: "acme"}, f.err
}

func TestRunPrintsWhatTheOperatorReads(t *testing.T) {
	run := func(kr *fakeKeyring, c Command) (string, string, error) {
		var out, errOut bytes.Buffer
		err := Run(t.Context(), kr, c, t0, &out, &errOut)
		return out.String(), errOut.String(), err
	}

	kr := &fakeKeyring{}
	out, errOut, err := run(kr, Command{Sub: Create, Name: "ci", Scope: auth.ScopeWrite, Tenant: "acme", Expires: 24 * time.Hour})
	if err != nil || out != "mcpmon_secret\n" {
		t.Fatalf("create: stdout %q, %v; want the key alone", out, err)
	}
	if want := "created API key 0123456789abcdef (ci, tenant acme, scope write, expires 2026-12-02T12:00:00Z); it is shown only now:\n"; errOut != want {
		t.Fatalf("create: stderr %q, want %q", errOut, want)
	}
	if kr.created.Expires != t0.Add(24*time.Hour) {
		t.Fatalf("create asked for expiry %s", kr.created.Expires)
	}
	if _, errOut, _ = run(&fakeKeyring{}, Command{Sub: Create, Name: "ci", Scope: auth.ScopeRead}); strings.Contains(errOut, "expires") {
		t.Fatalf("create without --expires names an expiry: %q", errOut)
	}

	kr = &fakeKeyring{list: []auth.Key{
		{ID: "aaaa", Name: "ci", Tenant: "acme", Scope: auth.ScopeRead, Created: t0.Add(-time.Hour), LastUsed: t0.Add(-time.Minute)},
		{ID: "bbbb", Name: "old", Tenant: "default", Scope: auth.ScopeAdmin, Created: t0.Add(-48 * time.Hour), Expires: t0.Add(-time.Hour)},
	}}
	out, _, err = run(kr, Command{Sub: List})
	want := "ID    NAME  TENANT   SCOPE  STATUS   CREATED               LAST USED             EXPIRES\n" +
		"aaaa  ci    acme     read   active   2026-12-01T11:00:00Z  2026-12-01T11:59:00Z  never\n" +
		"bbbb  old   default  admin  expired  2026-11-29T12:00:00Z  never                 2026-12-01T11:00:00Z\n"
	if err != nil || out != want {
		t.Fatalf("list:\n%s\nwant:\n%s", out, want)
	}

	kr = &fakeKeyring{}
	out, _, err = run(kr, Command{Sub: Revoke, Tenant: "acme", Ref: "ci"})
	if err != nil || kr.revoked != [2]string{"acme", "ci"} || out != "revoked API key 0123456789abcdef (ci, tenant acme): every API replica refuses it within 5s\n" {
		t.Fatalf("revoke: %q, %v (asked %v)", out, err, kr.revoked)
	}

	boom := auth.ErrKeyNotFound
	for _, sub := range []string{Create, List, Revoke} {
		out, _, err := run(&fakeKeyring{err: boom}, Command{Sub: sub, Name: "x", Scope: auth.ScopeRead, Ref: "x"})
		if !errors.Is(err, boom) || out != "" {
			t.Errorf("%s on a failing keyring: %q, %v; want its error and no output", sub, out, err)
		}
	}
}
