package alert

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/model"
)

// fakeWindows is a WindowSource over documents per tenant that counts
// list reads.
type fakeWindows struct {
	docs   map[string]map[string][]byte
	stamps map[string]uint64
	lists  map[string]int
}

func (f *fakeWindows) ListObjectsOf(_ context.Context, kind, tenant string) (map[string][]byte, error) {
	if kind != model.MaintenanceKind {
		return nil, fmt.Errorf("kind %s", kind)
	}
	f.lists[tenant]++
	return f.docs[tenant], nil
}

func (f *fakeWindows) ObjectsStamp(_ context.Context, _, tenant string) (uint64, error) {
	return f.stamps[tenant], nil
}

func (f *fakeWindows) put(tenant string, m model.Maintenance) {
	doc, _ := json.Marshal(m)
	if f.docs[tenant] == nil {
		f.docs[tenant] = map[string][]byte{}
	}
	f.docs[tenant][m.ID] = doc
	f.stamps[tenant]++
}

// TestWindowsDecodeOncePerChange: a tenant's windows are read and decoded
// again only after its stamp moved, and another tenant's writes never
// cause a re-read.
func TestWindowsDecodeOncePerChange(t *testing.T) {
	ctx := t.Context()
	src := &fakeWindows{docs: map[string]map[string][]byte{}, stamps: map[string]uint64{}, lists: map[string]int{}}
	src.put("a", model.Maintenance{ID: "a1", Tenant: "a", EndpointIDs: []string{"x"}})
	src.put(model.DefaultTenant, model.Maintenance{ID: "d1", EndpointIDs: []string{"x"}})
	src.docs["a"]["broken"] = []byte("{")
	w := NewWindows(src, nil)

	steps := []struct {
		do        func()
		tenant    string
		wantIDs   string
		wantLists int
	}{
		{nil, "a", "a1", 1},
		{nil, "a", "a1", 1},
		{func() { src.put("b", model.Maintenance{ID: "b1", Tenant: "b"}) }, "a", "a1", 1},
		{func() { src.put("a", model.Maintenance{ID: "a0", Tenant: "a"}) }, "a", "a0,a1", 2},
		{nil, "a", "a0,a1", 2},
		{nil, "", "d1", 1},
		{nil, model.DefaultTenant, "d1", 1},
	}
	for i, st := range steps {
		if st.do != nil {
			st.do()
		}
		ms, err := w.Of(ctx, st.tenant)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, m := range ms {
			ids = append(ids, m.ID)
		}
		tenant := st.tenant
		if tenant == "" {
			tenant = model.DefaultTenant
		}
		if got := strings.Join(ids, ","); got != st.wantIDs || src.lists[tenant] != st.wantLists {
			t.Fatalf("step %d: Of(%q) = %s after %d reads, want %s after %d", i, st.tenant, got, src.lists[tenant], st.wantIDs, st.wantLists)
		}
	}
	if src.lists["b"] != 0 {
		t.Fatalf("tenant b's windows were read %d times by tenant a's decisions", src.lists["b"])
	}
}
