package storetest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

func windowDoc(id, tenant string) []byte {
	return fmt.Appendf(nil, `{"id":%q,"tenant":%q,"endpointIds":["x"],"start":"2026-03-01T12:00:00Z","end":"2026-03-01T13:00:00Z"}`, id, tenant)
}

func objectIDs(docs map[string][]byte) []string {
	return append([]string{}, slices.Sorted(maps.Keys(docs))...)
}

// testObjectsByTenant: a tenant kind's documents are listed, counted and
// read by their tenant only (another tenant's ID reads as missing), an
// untenanted document is the default tenant's, a document whose tenant
// changes moves, a delete unlists it, and each tenant's stamp moves with
// its own writes only.
func testObjectsByTenant(t *testing.T, s store.Store, _ *clock.Fake) {
	ctx := t.Context()
	kind := store.KindMaintenance
	docs, err := s.ListObjectsOf(ctx, kind, "a")
	must(t, err)
	sameJSON(t, objectIDs(docs), []string{})
	stampB0, err := s.ObjectsStamp(ctx, kind, "b")
	must(t, err)

	for _, w := range []struct{ id, tenant string }{{"a2", "a"}, {"b1", "b"}, {"a1", "a"}, {"d1", ""}, {"ab1", "ab"}} {
		must(t, s.PutObject(ctx, kind, w.id, windowDoc(w.id, w.tenant)))
	}
	for tenant, want := range map[string][]string{
		"a": {"a1", "a2"}, "b": {"b1"}, "ab": {"ab1"}, model.DefaultTenant: {"d1"}, "": {"d1"}, "none": {},
	} {
		docs, err := s.ListObjectsOf(ctx, kind, tenant)
		must(t, err)
		sameJSON(t, objectIDs(docs), want)
		n, err := s.CountObjectsOf(ctx, kind, tenant)
		must(t, err)
		if n != len(want) {
			t.Fatalf("CountObjectsOf(%q) = %d, want %d", tenant, n, len(want))
		}
	}
	if docs, _ := s.ListObjectsOf(ctx, kind, "a"); string(docs["a1"]) != string(windowDoc("a1", "a")) {
		t.Fatalf("tenant list holds %q", docs["a1"])
	}

	doc, err := s.GetObjectOf(ctx, kind, "a", "a1")
	must(t, err)
	if string(doc) != string(windowDoc("a1", "a")) {
		t.Fatalf("GetObjectOf = %s", doc)
	}
	_, err = s.GetObjectOf(ctx, kind, "b", "a1")
	wantErr(t, err, model.ErrNotFound)
	_, err = s.GetObjectOf(ctx, kind, "b", "missing")
	wantErr(t, err, model.ErrNotFound)
	_, err = s.GetObjectOf(ctx, kind, "", "d1")
	must(t, err)

	stampA, err := s.ObjectsStamp(ctx, kind, "a")
	must(t, err)
	stampB, err := s.ObjectsStamp(ctx, kind, "b")
	must(t, err)
	if stampB == stampB0 {
		t.Fatalf("tenant b's stamp stayed %d across its first write", stampB)
	}
	// A write of a's moves a's stamp, not b's.
	must(t, s.PutObject(ctx, kind, "a1", windowDoc("a1", "a")))
	if n, _ := s.ObjectsStamp(ctx, kind, "a"); n == stampA {
		t.Fatal("tenant a's stamp did not move with an overwrite")
	}
	if n, _ := s.ObjectsStamp(ctx, kind, "b"); n != stampB {
		t.Fatal("tenant b's stamp moved with tenant a's write")
	}

	// A document rewritten with another tenant moves to it.
	stampA, _ = s.ObjectsStamp(ctx, kind, "a")
	must(t, s.PutObject(ctx, kind, "a2", windowDoc("a2", "b")))
	if docs, _ := s.ListObjectsOf(ctx, kind, "a"); !slices.Equal(objectIDs(docs), []string{"a1"}) {
		t.Fatalf("tenant a lists %v after a2 moved to b", objectIDs(docs))
	}
	if docs, _ := s.ListObjectsOf(ctx, kind, "b"); !slices.Equal(objectIDs(docs), []string{"a2", "b1"}) {
		t.Fatalf("tenant b lists %v after a2 moved there", objectIDs(docs))
	}
	if n, _ := s.ObjectsStamp(ctx, kind, "a"); n == stampA {
		t.Fatal("tenant a's stamp did not move when a document left it")
	}

	stampB, _ = s.ObjectsStamp(ctx, kind, "b")
	must(t, s.DeleteObject(ctx, kind, "b1"))
	if docs, _ := s.ListObjectsOf(ctx, kind, "b"); !slices.Equal(objectIDs(docs), []string{"a2"}) {
		t.Fatalf("tenant b lists %v after b1 was deleted", objectIDs(docs))
	}
	if n, _ := s.ObjectsStamp(ctx, kind, "b"); n == stampB {
		t.Fatal("tenant b's stamp did not move with a delete")
	}
	_, err = s.GetObjectOf(ctx, kind, "b", "b1")
	wantErr(t, err, model.ErrNotFound)
	all, err := s.ListObjects(ctx, kind)
	must(t, err)
	sameJSON(t, objectIDs(all), []string{"a1", "a2", "ab1", "d1"})

	// A tenant kind's document must name its tenant readably; other kinds
	// have no tenant methods.
	if err := s.PutObject(ctx, kind, "bad", []byte("not json")); err == nil {
		t.Fatal("a maintenance document whose tenant does not decode was stored")
	}
	if _, err := s.ListObjectsOf(ctx, store.KindCatalog, "a"); err == nil {
		t.Fatal("ListObjectsOf answered for a kind without a tenant index")
	}
}

// testObjectQuotaConcurrent: PutObjectWithin counts the tenant in the
// write's own transaction: concurrent creates at the limit let exactly the
// limit through, a rewrite of a document the tenant holds is not a create,
// other tenants are not counted, and a delete frees a place.
func testObjectQuotaConcurrent(t *testing.T, s store.Store, _ *clock.Fake) {
	ctx := t.Context()
	kind := store.KindMaintenance
	const limit, tries = 5, 24
	must(t, s.PutObjectWithin(ctx, kind, "other", windowDoc("other", "b"), 1))
	var wg sync.WaitGroup
	errs := make(chan error, tries)
	for i := range tries {
		wg.Go(func() {
			id := fmt.Sprintf("q%02d", i)
			errs <- s.PutObjectWithin(ctx, kind, id, windowDoc(id, "a"), limit)
		})
	}
	wg.Wait()
	close(errs)
	created := 0
	for err := range errs {
		if err == nil {
			created++
			continue
		}
		wantErr(t, err, store.ErrQuota)
	}
	docs, err := s.ListObjectsOf(ctx, kind, "a")
	must(t, err)
	if created != limit || len(docs) != limit {
		t.Fatalf("%d creates passed a limit of %d (tenant lists %d)", created, limit, len(docs))
	}
	ids := objectIDs(docs)
	must(t, s.PutObjectWithin(ctx, kind, ids[0], windowDoc(ids[0], "a"), limit)) // a rewrite
	wantErr(t, s.PutObjectWithin(ctx, kind, "over", windowDoc("over", "a"), limit), store.ErrQuota)
	must(t, s.DeleteObject(ctx, kind, ids[0]))
	must(t, s.PutObjectWithin(ctx, kind, "over", windowDoc("over", "a"), limit))
}

// testOwnedReads: GetEndpointOf and GetIncidentOf return the tenant's own
// record, and the same ErrNotFound for another tenant's ID as for a
// missing one.
func testOwnedReads(t *testing.T, s store.Store, _ *clock.Fake) {
	ctx := t.Context()
	for _, e := range []model.Endpoint{{ID: "ea", Tenant: "a"}, {ID: "eb", Tenant: "b"}, {ID: "ed"}} {
		e.Schedule = "@every 1m"
		_, err := s.CreateEndpoint(ctx, e)
		must(t, err)
	}
	inc := incident("ea", Start)
	inc.Tenant = "a"
	must(t, s.SaveTracker(ctx, model.Tracker{EndpointID: "ea"}, inc))
	old := incident("ed", Start.Add(-time.Hour)) // no tenant: the default one
	must(t, s.SaveTracker(ctx, model.Tracker{EndpointID: "ed"}, old))

	e, err := s.GetEndpointOf(ctx, "a", "ea")
	must(t, err)
	if e.ID != "ea" {
		t.Fatalf("GetEndpointOf = %+v", e)
	}
	_, err = s.GetEndpointOf(ctx, model.DefaultTenant, "ed")
	must(t, err)
	for _, c := range []struct{ tenant, id string }{{"b", "ea"}, {"a", "eb"}, {"a", "missing"}, {"a", "ed"}} {
		_, err := s.GetEndpointOf(ctx, c.tenant, c.id)
		wantErr(t, err, model.ErrNotFound)
	}

	got, err := s.GetIncidentOf(ctx, "a", inc.ID)
	must(t, err)
	if got.ID != inc.ID || got.Version != 1 {
		t.Fatalf("GetIncidentOf = %+v", got)
	}
	_, err = s.GetIncidentOf(ctx, "", old.ID)
	must(t, err)
	for _, c := range []struct{ tenant, id string }{{"b", inc.ID}, {"a", old.ID}, {"a", "missing"}} {
		_, err := s.GetIncidentOf(ctx, c.tenant, c.id)
		wantErr(t, err, model.ErrNotFound)
	}
	// An update keeps the incident its tenant's.
	got.State = model.IncidentAcknowledged
	_, err = s.UpdateIncident(ctx, got)
	must(t, err)
	if _, err := s.GetIncidentOf(ctx, "a", inc.ID); err != nil {
		t.Fatalf("after an update: %v", err)
	}
	list, err := s.ListIncidents(ctx, store.IncidentFilter{Tenant: "a"})
	must(t, err)
	if len(list) != 1 || list[0].State != model.IncidentAcknowledged {
		t.Fatalf("tenant a lists %+v after the update", list)
	}
}

// testSwapObject: SwapObject writes only while the document is the one
// read (a tenant kind's index and stamps moving as a put's would, a
// prober document of a region as a put would), refuses a changed one
// with ErrConflict and an absent one with ErrNotFound, writing nothing;
// of many replicas swapping one document read at the same moment,
// exactly one succeeds.
func testSwapObject(t *testing.T, s store.Store, _ *clock.Fake) {
	ctx := t.Context()
	wantErr(t, s.SwapObject(ctx, "catalog", "c1", []byte("v0"), []byte("v1")), model.ErrNotFound)
	if _, err := s.GetObject(ctx, "catalog", "c1"); err == nil {
		t.Fatal("a refused swap wrote the document")
	}
	for _, id := range []string{"c1", store.ProberObjectID("ep1", "eu")} {
		must(t, s.PutObject(ctx, store.KindCatalog, id, []byte("v1")))
		wantErr(t, s.SwapObject(ctx, store.KindCatalog, id, []byte("v0"), []byte("v2")), store.ErrConflict)
		if doc, _ := s.GetObject(ctx, store.KindCatalog, id); string(doc) != "v1" {
			t.Fatalf("%s after a refused swap = %q, want v1", id, doc)
		}
		must(t, s.SwapObject(ctx, store.KindCatalog, id, []byte("v1"), []byte("v2")))
		if doc, _ := s.GetObject(ctx, store.KindCatalog, id); string(doc) != "v2" {
			t.Fatalf("%s after a swap = %q, want v2", id, doc)
		}
	}

	kind := store.KindMaintenance
	v1, v2 := windowDoc("w1", "a"), windowDoc("w1", "b")
	wantErr(t, s.SwapObject(ctx, kind, "w1", v1, v2), model.ErrNotFound)
	must(t, s.PutObject(ctx, kind, "w1", v1))
	stampA, err := s.ObjectsStamp(ctx, kind, "a")
	must(t, err)
	wantErr(t, s.SwapObject(ctx, kind, "w1", windowDoc("w1", "c"), v2), store.ErrConflict)
	if st, _ := s.ObjectsStamp(ctx, kind, "a"); st != stampA {
		t.Fatal("a refused swap moved the tenant's stamp")
	}
	must(t, s.SwapObject(ctx, kind, "w1", v1, v2))
	for tenant, want := range map[string][]string{"a": {}, "b": {"w1"}} {
		docs, err := s.ListObjectsOf(ctx, kind, tenant)
		must(t, err)
		sameJSON(t, objectIDs(docs), want)
	}
	if st, _ := s.ObjectsStamp(ctx, kind, "a"); st == stampA {
		t.Fatal("a swap that moved the document left its old tenant's stamp")
	}

	const replicas = 8
	var wg sync.WaitGroup
	errs := make(chan error, replicas)
	for i := range replicas {
		wg.Go(func() { errs <- s.SwapObject(ctx, kind, "w1", v2, windowDoc("w1", fmt.Sprintf("r%d", i))) })
	}
	wg.Wait()
	close(errs)
	won := 0
	for err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, store.ErrConflict):
			t.Fatalf("concurrent swap: %v, want nil or ErrConflict", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d concurrent swaps of one read succeeded, want exactly 1", won)
	}
}
