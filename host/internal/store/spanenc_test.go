package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// randString draws a string that exercises JSON escaping: plain text,
// quotes and backslashes, HTML-unsafe bytes, control bytes, multi-byte
// and invalid UTF-8, U+2028 and U+2029. It leaves out \b and \f, which
// spans write as \u0008 and \u000c where encoding/json writes \b and \f.
func randString(rng *rand.Rand) string {
	pieces := []string{"a", "classify", "gen_ai.usage", " ", `"`, `\`, "<", ">", "&", "\n", "\r", "\t", "\x00", "\x1f",
		"\x7f", "é", "世界", "\u2028", "\u2029", "\xff", "\xe2\x82", "0123456789abcdef"}
	var b strings.Builder
	for range rng.IntN(12) {
		b.WriteString(pieces[rng.IntN(len(pieces))])
	}
	return b.String()
}

// randTime draws a UTC time with any count of trailing zero digits in
// its nanoseconds (none to all nine), from year 1 to 9999.
func randTime(rng *rand.Rand) time.Time {
	ns := rng.IntN(1_000_000_000)
	for range rng.IntN(10) {
		ns = ns / 10 * 10 // one more trailing zero (if it was not one)
	}
	if rng.IntN(4) == 0 {
		ns = 0
	}
	return time.Date(1+rng.IntN(9999), time.Month(1+rng.IntN(12)), 1+rng.IntN(28), rng.IntN(24), rng.IntN(60), rng.IntN(60), ns, time.UTC)
}

// TestAppendTime: the hand-written time format is RFC 3339 with
// nanoseconds as time.AppendFormat writes it, for times in any zone and
// the zero time; years outside 0–9999 take AppendFormat itself.
func TestAppendTime(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	zones := []*time.Location{time.UTC, time.FixedZone("east", 5*3600+1800), time.FixedZone("west", -8*3600)}
	times := []time.Time{{}, time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 1, time.UTC), time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)}
	for range 20000 {
		times = append(times, randTime(rng).In(zones[rng.IntN(len(zones))]))
	}
	for _, tm := range times {
		want := `"` + tm.UTC().Format(time.RFC3339Nano) + `"`
		if got := string(appendTime(nil, tm)); got != want {
			t.Fatalf("%v: got %s, want %s", tm, got, want)
		}
	}
	// One encoder, as a burst's spans use it: the next time often falls
	// in the second before it (in another zone too), whose text it reuses.
	var e spanEncoder
	tm := times[0]
	for i := range 20000 {
		switch rng.IntN(5) {
		case 0:
			tm = times[i%len(times)]
		case 1:
			tm = tm.Truncate(time.Second).Add(time.Duration(rng.IntN(1_000_000_000)))
		case 2:
			tm = tm.Add(time.Duration(rng.IntN(3)-1) * time.Second)
		case 3:
			tm = tm.In(zones[rng.IntN(len(zones))])
		}
		want := `"` + tm.UTC().Format(time.RFC3339Nano) + `"`
		if got := string(e.appendTime(nil, tm)); got != want {
			t.Fatalf("%v after a time of the same encoder: got %s, want %s", tm, got, want)
		}
	}
}

// TestSpanBodyJSON: a span's hand-written encoding is encoding/json's
// for the same span (without task, execution and seq, which its key
// holds), for random strings, times, attributes, status and links.
func TestSpanBodyJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	attrs := func() Attributes {
		a := Attributes{}
		for range rng.IntN(16) { // past the insertion sort's 12 too
			k := randString(rng) + "k"
			switch rng.IntN(5) {
			case 0:
				a[k] = String(randString(rng))
			case 1:
				a[k] = Int(rng.Int64() - rng.Int64())
			case 2:
				a[k] = Float(rng.NormFloat64() * 1e6)
			case 3:
				a[k] = Bool(rng.IntN(2) == 0)
			default:
				a[k] = Strings(randString(rng), randString(rng))
			}
		}
		return a
	}
	for range 3000 {
		sp := Span{
			TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", SpanID: "00f067aa0ba902b7", Name: randString(rng) + "n",
			Kind: SpanClient, Start: randTime(rng), End: randTime(rng), Attributes: attrs(),
			Status: SpanStatus{Code: CodeError, Message: randString(rng)},
		}
		if rng.IntN(2) == 0 {
			sp.ParentSpanID = "b7ad6b7169203331"
			sp.Links = []Link{{TraceID: sp.TraceID, SpanID: sp.ParentSpanID, Attributes: attrs()}}
		}
		want, err := json.Marshal(&sp)
		must(t, err)
		want = bytes.Replace(want, []byte(`"task":"","execution":"","seq":0,`), nil, 1)
		got, err := appendSpanBody([]byte{'{'}, &sp)
		must(t, err)
		got = append(got, '}')
		if !bytes.Equal(got, want) {
			t.Fatalf("span encodes as\n%s\nencoding/json writes\n%s", got, want)
		}
	}
}

// TestSpanBodyJSONSharedKeys: spans encoded one after another by one
// encoder, as a burst's are, whose attributes often have the keys of the
// span before (found without a sort, their encoded forms reused) and
// often the values (theirs reused too), or as many other keys, encode
// as encoding/json writes each, and the encoder notes each span's
// provider call as callUsage reads it.
func TestSpanBodyJSONSharedKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 23))
	var sets [][]string
	for range 6 {
		var keys []string
		for range 1 + rng.IntN(8) {
			keys = append(keys, randString(rng)+"k")
		}
		sets = append(sets, keys)
	}
	sets = append(sets, []string{"a", "b", "c"}, []string{"a", "b", "d"}, []string{"b", "c", "a"},
		[]string{AttrGenAIUsageInputTokens, AttrGenAIUsageOutputTokens, attrCostUSD, "a"},
		[]string{AttrGenAIUsageInputTokens, "b"}, []string{AttrGenAIUsageOutputTokens, attrCostUSD})
	// Values the spans share, as the model of a burst's calls: equal ones
	// (a string cloned) and ones of other kinds with the same bits.
	shared := []Value{String("gpt"), String(strings.Clone("gpt")), String("gpt-4o"), Int(3), Int(4),
		Float(3), Float(math.Inf(1)), Float(math.NaN()), Bool(true), Int(1), Strings("gpt"), String(""), {}}
	value := func() Value {
		if rng.IntN(2) == 0 {
			return shared[rng.IntN(len(shared))]
		}
		switch rng.IntN(4) {
		case 0:
			return String(randString(rng))
		case 1:
			return Int(rng.Int64() - rng.Int64())
		case 2:
			return Float(rng.NormFloat64() * 1e6)
		}
		return Bool(rng.IntN(2) == 0)
	}
	var e spanEncoder
	set := sets[0]
	hits, calls := 0, 0
	for i := range 3000 {
		if rng.IntN(4) == 0 {
			set = sets[rng.IntN(len(sets))]
		}
		a := Attributes{}
		for _, k := range set {
			a[strings.Clone(k)] = value() // equal keys, not the same bytes
		}
		sp := Span{TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", SpanID: "00f067aa0ba902b7", Name: "n",
			Start: randTime(rng), End: randTime(rng), Attributes: a}
		if rng.IntN(8) == 0 {
			sp.Links = []Link{{TraceID: sp.TraceID, SpanID: sp.SpanID, Attributes: Attributes{"l": value()}}}
		}
		if len(e.sameKeys) == len(a) {
			hits++
		}
		sp.Seq = uint64(i + 1)
		want, jerr := json.Marshal(&sp)
		got, err := e.appendSpanBody([]byte{'{'}, &sp)
		if (err != nil) != (jerr != nil) {
			t.Fatalf("span %d: encoder's error %v, encoding/json's %v", i, err, jerr)
		}
		if err != nil {
			continue // a value that is not finite
		}
		want = bytes.Replace(want, []byte(`"task":"","execution":"","seq":`+strconv.Itoa(i+1)+`,`), nil, 1)
		got = append(got, '}')
		if !bytes.Equal(got, want) {
			t.Fatalf("span %d encodes as\n%s\nencoding/json writes\n%s", i, got, want)
		}
		c, ok := callUsage(&sp)
		if ok != e.callOK || ok && c != e.call {
			t.Fatalf("span %d: the encoder notes call %v (%v), callUsage reads %v (%v)", i, e.call, e.callOK, c, ok)
		}
		if ok && c.Tokens != 0 {
			calls++
		}
	}
	if calls < 200 {
		t.Fatalf("only %d spans were calls with tokens", calls)
	}
	if hits < 1000 {
		t.Fatalf("only %d spans had as many keys as the attributes before", hits)
	}
}

// everyRule is r running every rule on every input: what the hint scan
// must agree with, since a rule whose hints are absent cannot match.
func everyRule(r *Redactor) *Redactor {
	all := *r
	hints := *r.hints
	hints.always = 1<<min(len(r.rules), 64) - 1
	if len(r.rules) >= 64 {
		hints.always = ^uint64(0)
	}
	all.hints = &hints
	return &all
}

// TestRedactSpanBatches: a batch of spans (which the hint scan reads
// in four parts at once) whose attribute keys and values hold secrets in
// every form, at random places, redacts exactly as running every rule on
// it does, and each secret's pieces are gone.
func TestRedactSpanBatches(t *testing.T) {
	user, err := NewRedactor(`corp-[0-9]{6}`, `(?i)ticket-(?P<secret>[a-z0-9]+)`)
	must(t, err)
	g := &secretGen{rng: rand.New(rand.NewPCG(13, 17))}
	for _, r := range []*Redactor{DefaultRedactor(), user} {
		slow := everyRule(r)
		for range 300 {
			var js []byte
			var pieces []string
			n := 1 + g.rng.IntN(2*spanBatch)
			js = append(js, '[')
			for i := range n {
				sp := benchSpan("t1", "t1-e1", i)
				sp.TraceID, sp.SpanID = TraceIDFor("t1", "t1-e1"), SpanIDFor("t1", "t1-e1", uint64(i+1))
				if g.rng.IntN(8) == 0 {
					f := formsOfSecrets[g.rng.IntN(len(formsOfSecrets))]
					text, p := f.make(g)
					pieces = append(pieces, p...)
					key := "sextant.note"
					// An assignment's name as the attribute's key.
					if name, value, ok := strings.Cut(text, "="); ok && g.rng.IntN(2) == 0 &&
						name != "" && strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == "" {
						key, text = name, value
					}
					if key == "sextant.note" {
						text = g.words(2) + " " + text + "\n" + g.words(1)
					}
					sp.Attributes[key] = String(text)
				}
				if i > 0 {
					js = append(js, ',')
				}
				js = append(js, '{')
				if js, err = appendSpanBody(js, &sp); err != nil {
					t.Fatal(err)
				}
				js = append(js, '}')
			}
			js = append(js, ']')
			got, err := r.redactJSON(js)
			must(t, err)
			want, err := slow.redactJSON(js)
			must(t, err)
			if !bytes.Equal(got, want) {
				t.Fatalf("batch of %d spans (%d bytes) redacts as\n%s\nevery rule gives\n%s", n, len(js), got, want)
			}
			if !json.Valid(got) {
				t.Fatalf("redacted batch is not JSON:\n%s", got)
			}
			for _, p := range pieces {
				if bytes.Contains(got, []byte(p)) {
					t.Fatalf("secret piece %q survives in\n%s", p, got)
				}
			}
		}
	}
}

// TestRecycledSpanEncoder: an encoder that has encoded other spans (of
// other executions, other keys, other seconds; reset as the pool resets
// it; before and after a switch of layout) writes each span exactly as a
// new encoder does.
func TestRecycledSpanEncoder(t *testing.T) {
	defer func(v bool) { implicitIDs = v }(implicitIDs)
	rng := rand.New(rand.NewPCG(29, 31))
	execs := [][2]string{{"t1", "t1-e1"}, {"t1", "t1-e2"}, {"t2", "t2-e1"}}
	sets := [][]string{{"a", "b", "c"}, {"c", "b", "a"}, {"a", "b", "d"}, {"gen_ai.usage.input_tokens", "sextant.node"}}
	for range 20 { // past maxPooledAttrs sometimes
		var keys []string
		for range 1 + rng.IntN(300) {
			keys = append(keys, randString(rng)+"k")
		}
		sets = append(sets, keys)
	}
	var recycled spanEncoder
	start := randTime(rng)
	for i := range 5000 {
		switch rng.IntN(16) {
		case 0:
			recycled.reset()
		case 1:
			implicitIDs = !implicitIDs
		}
		x := execs[rng.IntN(len(execs))]
		sp := Span{Task: x[0], Execution: x[1], Seq: uint64(1 + rng.IntN(50)), Name: "n", Start: start.Add(time.Duration(rng.IntN(3e9))),
			Attributes: Attributes{}}
		sp.End = sp.Start.Add(time.Duration(rng.IntN(2e9)))
		sp.TraceID, sp.SpanID = TraceIDFor(x[0], x[1]), SpanIDFor(x[0], x[1], sp.Seq)
		if rng.IntN(4) == 0 { // another execution's ids, or a given span id
			y := execs[rng.IntN(len(execs))]
			sp.TraceID, sp.SpanID = TraceIDFor(y[0], y[1]), SpanIDFor(y[0], y[1], uint64(rng.IntN(50)))
		}
		for _, k := range sets[rng.IntN(len(sets))] {
			sp.Attributes[strings.Clone(k)] = String(randString(rng))
		}
		var fresh spanEncoder
		fresh.deriveFor(sp.Task, sp.Execution)
		want, err := fresh.appendSpanBody(nil, &sp)
		must(t, err)
		recycled.deriveFor(sp.Task, sp.Execution)
		got, err := recycled.appendSpanBody(nil, &sp)
		must(t, err)
		if !bytes.Equal(got, want) {
			t.Fatalf("span %d: a recycled encoder writes\n%s\na new one\n%s", i, got, want)
		}
	}
}

// TestSpanScanCuts: the hint scan of a batch whose span bodies repeat
// segments (cut to their ends, see hintScan) finds the rules a scan of
// the whole batch finds, and the batch redacts as running every rule on
// it does, for batches whose repeated parts hold secrets and hint text
// (in names, parents, attributes, links), among ones that differ.
func TestSpanScanCuts(t *testing.T) {
	user, err := NewRedactor(`corp-[0-9]{6}`, `(?i)ticket-(?P<secret>[a-z0-9]+)`)
	must(t, err)
	// Hints across the ends of the segments hintScan cuts: the first
	// before a span's parent, the second past its status.
	across, err := NewRedactor(`,"parent_span_id":"(?P<secret>[0-9a-f]{4})`, `(?P<secret>ok)"\}\},\{"seq"`)
	must(t, err)
	g := &secretGen{rng: rand.New(rand.NewPCG(37, 41))}
	cut := 0
	for _, r := range []*Redactor{DefaultRedactor(), user, across} {
		slow := everyRule(r)
		var e, es spanEncoder
		var notes []string
		for round := range 120 {
			// Parts the spans of the batch draw from: a few, so that
			// neighbours share them, and later batches (which then find
			// their segments kept).
			if round%5 == 0 {
				notes = notes[:0]
				for range 3 {
					f := formsOfSecrets[g.rng.IntN(len(formsOfSecrets))]
					text, _ := f.make(g)
					notes = append(notes, g.words(1)+" "+text, "token", `"password":`, g.words(2))
				}
			}
			n := 1 + g.rng.IntN(spanBatch+spanBatch/4)
			spans := make([]Span, n)
			// Half the batches are spans alike but for their seqs and
			// times, drawn from the same few parts as the batches before:
			// every segment of theirs may be cut.
			alike := g.rng.IntN(2) == 0
			template := uint64(round/5*2 + g.rng.IntN(2))
			for i := range spans {
				sp := &spans[i]
				*sp = benchSpan("t1", "t1-e1", i)
				sp.Seq = uint64(i + 1)
				sp.TraceID, sp.SpanID = TraceIDFor("t1", "t1-e1"), SpanIDFor("t1", "t1-e1", sp.Seq)
				rng := g.rng
				if alike {
					rng = rand.New(rand.NewPCG(template, 0)) // the same draws for each
				}
				if rng.IntN(3) == 0 {
					sp.Name = notes[rng.IntN(len(notes))]
				}
				for range rng.IntN(3) {
					sp.Attributes[notes[rng.IntN(len(notes))]] = String(notes[rng.IntN(len(notes))])
				}
				if rng.IntN(4) == 0 {
					sp.Links = []Link{{TraceID: sp.TraceID, SpanID: sp.ParentSpanID,
						Attributes: Attributes{"note": String(notes[rng.IntN(len(notes))])}}}
				}
				if !alike && rng.IntN(8) == 0 {
					sp.SpanID = "b7ad6b7169203331" // given, not derived: written
				}
			}
			e.deriveFor("t1", "t1-e1")
			lo := g.rng.IntN(3)
			b, err := e.appendBatch(make([]byte, lo), spans)
			must(t, err)
			// Each hint set with an encoder of its own, which keeps the
			// segments of the batches before.
			es.segs = append(es.segs[:0], e.segs...)
			for _, x := range []struct {
				e *spanEncoder
				h *hintSet
			}{{&e, r.hints}, {&es, slow.hints}} {
				got, want := x.e.hintScan(x.h, b, lo), x.h.scan(b[lo:])
				if got != want {
					t.Fatalf("round %d: the cut scan finds rules %b, the whole scan %b, in\n%s", round, got, want, b[lo:])
				}
			}
			if len(e.scanText) > 0 && len(e.scanText) < len(b)-lo {
				cut++
			}
			js := b[lo:]
			got, err := r.redactJSONScanned(slices.Clone(js), e.hintScan(r.hints, b, lo))
			want, werr := slow.redactJSON(slices.Clone(js))
			if fmt.Sprint(err) != fmt.Sprint(werr) { // across's may break the JSON
				t.Fatalf("round %d: error %v, every rule's %v", round, err, werr)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("round %d: batch redacts as\n%s\nevery rule gives\n%s", round, got, want)
			}
			e.scanText = e.scanText[:0]
			if g.rng.IntN(8) == 0 {
				e.reset()
			}
		}
	}
	if cut < 200 {
		t.Fatalf("only %d of 360 batches were scanned cut", cut)
	}
}
