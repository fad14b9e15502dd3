package scheduler

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/queue"
)

// Sizes of BenchmarkVsRobfig100k. The window is scaled to a minute rather than
// run for a real minute per side so that `make bench` stays short: with the
// endpoints spread evenly over the minute, any 15 s holds a quarter of a
// minute's fires.
const (
	vsEndpoints = 100_000
	vsWindow    = 15 * time.Second
	// robfig's Cron re-sorts all entries after every AddFunc and Remove, so
	// adding or removing 100k at runtime is quadratic (a minute and several
	// minutes on the CI machine); each is run for this long and the rest is
	// projected from the measured per-operation cost, which grows linearly
	// with the number of entries.
	vsRobfigBudget = 5 * time.Second
)

// BenchmarkVsRobfig100k runs, in one process and one run, the mcpmon
// scheduler and robfig/cron's own cron.Cron, each with 100,000 schedules that
// fire once a minute spread evenly over it, one side after the other (only
// one side's state is live while it is measured). Both do the same work per
// fire: build the probe command and hand it to the same recording sender.
//
//   - mcpmon: 100k endpoints on "@every 60s" (spread by ID hash), Run with
//     the default 64 publishing workers.
//   - robfig: cron.New(cron.WithSeconds()) with 100k AddJob("S * * * * *")
//     for S = i mod 60: its documented way to fire once a minute at a chosen
//     second. Each job computes its slot (the latest instant ≤ now at second
//     S) and publishes the command as the scheduler's worker does.
//
// It reports process CPU (getrusage) per minute of scheduling, lateness of
// each publish against its slot (p50/p99/max), heap per schedule (HeapAlloc
// after GC, 100k schedules minus none), and the time and allocations of
// adding and removing 100k schedules while the scheduler runs. Run it with
// -benchtime 1x: one iteration takes about a minute.
func BenchmarkVsRobfig100k(b *testing.B) {
	ids := make([]string, vsEndpoints)
	for i := range ids {
		ids[i] = fmt.Sprintf("ep-%06d", i)
	}
	for b.Loop() {
		ours := measureOurs(b, ids)
		peer := measureRobfig(b, ids)
		b.ReportMetric(ours.cpuPerMin.Seconds()*1e3, "ours-cpu-ms/min")
		b.ReportMetric(peer.cpuPerMin.Seconds()*1e3, "robfig-cpu-ms/min")
		b.ReportMetric(ours.cpuPerMin.Seconds()/peer.cpuPerMin.Seconds(), "cpu-ratio")
		b.ReportMetric(ms(ours.p99), "ours-p99-ms")
		b.ReportMetric(ms(peer.p99), "robfig-p99-ms")
		b.ReportMetric(ours.bytesPer, "ours-B/schedule")
		b.ReportMetric(peer.bytesPer, "robfig-B/schedule")
		var t strings.Builder
		row := func(what, o, p, r string) { fmt.Fprintf(&t, "\n| %s | %s | %s | %s |", what, o, p, r) }
		fmt.Fprintf(&t, "\n100k schedules, one fire a minute each; %s window per side scaled to a minute; %d CPUs", vsWindow, runtime.NumCPU())
		row("measure", "mcpmon", "robfig cron.Cron", "mcpmon / robfig")
		row("---", "---", "---", "---")
		row("fires in the window", fmt.Sprint(ours.fires), fmt.Sprint(peer.fires), "")
		row("CPU per minute", ours.cpuPerMin.Round(time.Millisecond).String(), peer.cpuPerMin.Round(time.Millisecond).String(),
			fmt.Sprintf("%.3f×", ours.cpuPerMin.Seconds()/peer.cpuPerMin.Seconds()))
		row("lateness p50 / p99 / max", lat(ours), lat(peer), fmt.Sprintf("p99 %.2f×", float64(ours.p99)/float64(peer.p99)))
		row("heap per schedule", fmt.Sprintf("%.0f B", ours.bytesPer), fmt.Sprintf("%.0f B", peer.bytesPer),
			fmt.Sprintf("%.2f×", ours.bytesPer/peer.bytesPer))
		row("add 100k at runtime", ours.add.String(), peer.add.String(), fmt.Sprintf("%.5f×", ours.add.d.Seconds()/peer.add.d.Seconds()))
		row("remove 100k at runtime", ours.remove.String(), peer.remove.String(), fmt.Sprintf("%.5f×", ours.remove.d.Seconds()/peer.remove.d.Seconds()))
		b.Log(t.String())
	}
}

type vsResult struct {
	fires         int
	cpuPerMin     time.Duration
	p50, p99, max time.Duration
	bytesPer      float64
	add, remove   bulkOp
}

// bulkOp is the cost of adding or removing vsEndpoints schedules; when only
// done of them fit the budget, d is projected (see vsRobfigBudget).
type bulkOp struct {
	d       time.Duration
	allocs  uint64 // measured, over done operations
	done    int
	elapsed time.Duration
}

func (o bulkOp) String() string {
	per := float64(o.allocs) / float64(max(o.done, 1))
	if o.done == vsEndpoints {
		return fmt.Sprintf("%s (%.1f allocs each)", o.d.Round(time.Millisecond), per)
	}
	return fmt.Sprintf("~%s projected (%d done in %s; %.1f allocs each)", o.d.Round(time.Second), o.done,
		o.elapsed.Round(time.Millisecond), per)
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func lat(r vsResult) string {
	return fmt.Sprintf("%.2f / %.2f / %.2f ms", ms(r.p50), ms(r.p99), ms(r.max))
}

// vsSender records when each command was published; the slot is read back
// from the body after the window, outside the measured CPU.
type vsSender struct{ cur atomic.Pointer[vsRecords] }

type vsRecords struct {
	n    atomic.Int64
	at   []int64
	body [][]byte
}

func newRecords(capacity int) *vsRecords {
	return &vsRecords{at: make([]int64, capacity), body: make([][]byte, capacity)}
}

func (s *vsSender) Publish(_ context.Context, in queue.SendInput) (string, error) {
	now := time.Now().UnixNano()
	r := s.cur.Load()
	if i := r.n.Add(1) - 1; i < int64(len(r.at)) {
		r.at[i], r.body[i] = now, in.Body
	}
	return "", nil
}

// window records the sender for vsWindow and returns the CPU the process
// used per minute and the lateness distribution of what was published.
func (s *vsSender) window(b *testing.B, res *vsResult) {
	rec := newRecords(vsEndpoints)
	runtime.GC()
	cpu0 := processCPU()
	s.cur.Store(rec)
	time.Sleep(vsWindow)
	s.cur.Store(newRecords(0))
	cpu := processCPU() - cpu0
	res.cpuPerMin = time.Duration(float64(cpu) * float64(time.Minute) / float64(vsWindow))
	n := min(int(rec.n.Load()), len(rec.at))
	if n == 0 {
		b.Fatal("nothing published in the window")
	}
	lats := make([]time.Duration, n)
	for i := range n {
		var c msg.ProbeCommand
		if err := msg.Decode(rec.body[i], &c); err != nil {
			b.Fatal(err)
		}
		lats[i] = time.Duration(rec.at[i] - c.Slot.UnixNano())
	}
	slices.Sort(lats)
	res.fires = n
	res.p50, res.p99, res.max = lats[n/2], lats[n*99/100], lats[n-1]
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func heapAfterGC() (heap, mallocs uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc, ms.Mallocs
}

func mallocs() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs
}

func measureOurs(b *testing.B, ids []string) (res vsResult) {
	snd := &vsSender{}
	snd.cur.Store(newRecords(0))
	heap0, _ := heapAfterGC()
	s := New(snd, Options{})
	ctx, cancel := context.WithCancel(b.Context())
	done := make(chan struct{})
	go func() { _ = s.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	m0, t0 := mallocs(), time.Now()
	for _, id := range ids {
		if err := s.Upsert(ep(id, "@every 60s")); err != nil {
			b.Fatal(err)
		}
	}
	res.add = bulkOp{d: time.Since(t0), allocs: mallocs() - m0, done: len(ids)}
	heap1, _ := heapAfterGC()
	res.bytesPer = float64(int64(heap1)-int64(heap0)) / float64(len(ids))

	time.Sleep(time.Second) // past the adds' own fires
	snd.window(b, &res)

	m0, t0 = mallocs(), time.Now()
	for _, id := range ids {
		s.Remove(id)
	}
	res.remove = bulkOp{d: time.Since(t0), allocs: mallocs() - m0, done: len(ids)}
	if s.Len() != 0 {
		b.Fatalf("%d schedules left after removing all", s.Len())
	}
	return res
}

// robfigJob is what the robfig runner would run per endpoint: build the
// slot's command and publish it.
type robfigJob struct {
	id  string
	sec int
	snd *vsSender
}

func (j *robfigJob) Run() {
	now := time.Now().UTC()
	slot := now.Truncate(time.Minute).Add(time.Duration(j.sec) * time.Second)
	if slot.After(now) {
		slot = slot.Add(-time.Minute)
	}
	cmd := msg.NewProbeCommand(j.id, slot)
	_, _ = j.snd.Publish(context.Background(), queue.SendInput{GroupID: cmd.GroupID(), Body: cmd.Body()})
}

func robfigSpec(i int) string { return fmt.Sprintf("%d * * * * *", i%60) }

func measureRobfig(b *testing.B, ids []string) (res vsResult) {
	snd := &vsSender{}
	snd.cur.Store(newRecords(0))

	// Memory and the window: entries added before Start (robfig appends
	// them; the sort happens once Start runs).
	heap0, _ := heapAfterGC()
	c := cron.New(cron.WithSeconds())
	entries := make([]cron.EntryID, len(ids))
	for i, id := range ids {
		e, err := c.AddJob(robfigSpec(i), &robfigJob{id: id, sec: i % 60, snd: snd})
		if err != nil {
			b.Fatal(err)
		}
		entries[i] = e
	}
	heap1, _ := heapAfterGC()
	res.bytesPer = float64(int64(heap1)-int64(heap0)-int64(len(ids))*8) / float64(len(ids)) // minus entries[]
	c.Start()
	time.Sleep(2 * time.Second) // past the first sort of 100k
	snd.window(b, &res)

	// Remove at runtime: from 100k entries down, each remove rebuilds the
	// slice and re-sorts it, so the cost per remove falls linearly with the
	// entries left; the total is projected as done × (per-remove cost) ×
	// the mean size over the whole run / the mean size over the done part.
	m0, t0 := mallocs(), time.Now()
	done := 0
	for _, e := range entries {
		c.Remove(e)
		done++
		if done%64 == 0 && time.Since(t0) > vsRobfigBudget {
			break
		}
	}
	res.remove = project(time.Since(t0), mallocs()-m0, done, len(ids), false)
	<-c.Stop().Done()

	// Add at runtime into a running Cron, from none up.
	c = cron.New(cron.WithSeconds())
	c.Start()
	m0, t0 = mallocs(), time.Now()
	done = 0
	for i, id := range ids {
		if _, err := c.AddJob(robfigSpec(i), &robfigJob{id: id, sec: i % 60, snd: snd}); err != nil {
			b.Fatal(err)
		}
		done++
		if done%64 == 0 && time.Since(t0) > vsRobfigBudget {
			break
		}
	}
	res.add = project(time.Since(t0), mallocs()-m0, done, len(ids), true)
	<-c.Stop().Done()
	return res
}

// project scales a partial bulk operation to n, assuming each operation
// costs in proportion to the entries present (growing: 0→n; shrinking: n→0).
func project(d time.Duration, allocs uint64, done, n int, growing bool) bulkOp {
	o := bulkOp{d: d, allocs: allocs, done: done, elapsed: d}
	if done >= n {
		return o
	}
	// Sum of sizes over the done part and over the whole run.
	var part float64
	if growing {
		part = float64(done) * float64(done) / 2
	} else {
		part = float64(done) * (float64(n) - float64(done)/2)
	}
	whole := float64(n) * float64(n) / 2
	o.d = time.Duration(float64(d) * whole / part)
	return o
}
