package model

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestMaintenanceBoundsNameTheField(t *testing.T) {
	ids := func(n, l int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = strings.Repeat("e", l)
		}
		return out
	}
	sel := func(n int) map[string]string {
		out := map[string]string{}
		for i := range n {
			out[fmt.Sprintf("k%d", i)] = "v"
		}
		return out
	}
	tests := []struct {
		name        string
		m           Maintenance
		wantPointer string
	}{
		{"at every cap", Maintenance{Name: strings.Repeat("n", MaxWindowNameLen), Cron: strings.Repeat("c", MaxWindowCronLen),
			EndpointIDs: ids(MaxWindowEndpointIDs, MaxWindowIDLen), Selector: sel(MaxWindowSelector)}, ""},
		{"name", Maintenance{Name: strings.Repeat("n", MaxWindowNameLen+1)}, "#/name"},
		{"cron", Maintenance{Cron: strings.Repeat("c", MaxWindowCronLen+1)}, "#/cron"},
		{"too many IDs", Maintenance{EndpointIDs: ids(MaxWindowEndpointIDs+1, 1)}, "#/endpointIds"},
		{"one long ID", Maintenance{EndpointIDs: append(ids(3, 1), strings.Repeat("e", MaxWindowIDLen+1))}, "#/endpointIds/3"},
		{"an ID that needs escaping", Maintenance{EndpointIDs: []string{"ok", "<"}}, "#/endpointIds/1"},
		{"too many labels", Maintenance{Selector: sel(MaxWindowSelector + 1)}, "#/selector"},
		{"long label name", Maintenance{Selector: map[string]string{strings.Repeat("k", MaxWindowLabelKeyLen+1): "v"}}, "#/selector"},
		{"long label value", Maintenance{Selector: map[string]string{"a/b": strings.Repeat("v", MaxWindowLabelValLen+1)}}, "#/selector/a~1b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, detail := tc.m.Bounds()
			if p != tc.wantPointer {
				t.Fatalf("Bounds() = %q (%s), want %q", p, detail, tc.wantPointer)
			}
			if p != "" && tc.name != "an ID that needs escaping" && !strings.ContainsAny(detail, "0123456789") {
				t.Fatalf("detail %q does not name the limit", detail)
			}
		})
	}
}

// TestWindowAtEveryCapFitsTheDocumentCap: the document cap is above what
// the field caps allow together, so a window the fields accept is stored.
func TestWindowAtEveryCapFitsTheDocumentCap(t *testing.T) {
	m := Maintenance{ID: strings.Repeat("i", 64), Tenant: strings.Repeat("t", 64), Name: strings.Repeat("<", MaxWindowNameLen),
		Cron: strings.Repeat("<", MaxWindowCronLen), EndpointIDs: make([]string, MaxWindowEndpointIDs), Selector: map[string]string{}}
	for i := range m.EndpointIDs {
		m.EndpointIDs[i] = strings.Repeat("e", MaxWindowIDLen)
	}
	for i := range MaxWindowSelector {
		m.Selector[fmt.Sprintf("%0*d", MaxWindowLabelKeyLen, i)] = strings.Repeat("<", MaxWindowLabelValLen) // escaped: six bytes each
	}
	if p, d := m.Bounds(); p != "" {
		t.Fatalf("the window at every cap is oversize: %s %s", p, d)
	}
	doc, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if len(doc) > MaxWindowBytes {
		t.Fatalf("a window at every cap encodes to %d bytes, over MaxWindowBytes %d", len(doc), MaxWindowBytes)
	}
}

// fakeWindows is a WindowSource over documents per tenant that counts
// list reads.
type fakeWindows struct {
	docs   map[string]map[string][]byte
	stamps map[string]uint64
	lists  map[string]int
}

func (f *fakeWindows) ListObjectsOf(_ context.Context, kind, tenant string) (map[string][]byte, error) {
	if kind != MaintenanceKind {
		return nil, fmt.Errorf("kind %s", kind)
	}
	f.lists[tenant]++
	return f.docs[tenant], nil
}

func (f *fakeWindows) ObjectsStamp(_ context.Context, _, tenant string) (uint64, error) {
	return f.stamps[tenant], nil
}

func (f *fakeWindows) put(tenant string, m Maintenance) {
	doc, _ := json.Marshal(m)
	if f.docs[tenant] == nil {
		f.docs[tenant] = map[string][]byte{}
	}
	f.docs[tenant][m.ID] = doc
	f.stamps[tenant]++
}
