// Package instrument rewrites a WebAssembly module so that a runaway guest
// hands control back to the host every so often: it adds a mutable i32
// countdown global and an imported function (ImportModule.ImportName, type
// () -> ()), and at the head of every loop — and at the entry of every
// function that does not start with a loop — decrements the counter and,
// when it reaches zero, resets it and calls the import. The host's import
// checks the call's deadline and traps when it has passed.
//
// It also joins data segments that lie a short run of zeros apart
// (dataSection): the Go linker emits tens of thousands of them, which
// wazero otherwise decodes and copies one by one at every instantiation.
//
// This replaces wazero's WithCloseOnContextDone, which calls into Go at
// every loop back-edge (RATIONALE.md, "Why a wasm call is stopped
// by instrumentation"). The package must stay a pure byte-to-byte rewrite:
// it knows nothing of sextant's ABI, and it never panics on malformed
// input, it returns an error; the caller compiles (and so validates) what
// it returns.
package instrument

import (
	"errors"
	"fmt"
)

// The import every instrumented module has.
const (
	ImportModule = "sextant_rt"
	ImportName   = "yield"
)

// Version names the rewrite; a cache of instrumented modules must key on
// it so that a change to the rewrite does not reuse old output.
const Version = "2"

// ErrMalformed is wrapped by every error about the input bytes.
var ErrMalformed = errors.New("malformed module")

// Section ids (WebAssembly core spec §5.5.2).
const (
	secCustom    = 0
	secType      = 1
	secImport    = 2
	secFunction  = 3
	secTable     = 4
	secMemory    = 5
	secGlobal    = 6
	secExport    = 7
	secStart     = 8
	secElement   = 9
	secCode      = 10
	secData      = 11
	secDataCount = 12
	secTag       = 13
)

// order is the position a section must have among the non-custom ones.
var order = map[byte]int{
	secType: 1, secImport: 2, secFunction: 3, secTable: 4, secMemory: 5, secTag: 6,
	secGlobal: 7, secExport: 8, secStart: 9, secElement: 10, secDataCount: 11,
	secCode: 12, secData: 13,
}

type section struct {
	id   byte
	body []byte
}

// Instrument returns a copy of the module bin with the countdown added;
// interval is the counter's start and reset value (loop headers and
// function entries between two calls of the import), at least 1.
func Instrument(bin []byte, interval int32) (out []byte, err error) {
	if interval < 1 {
		return nil, fmt.Errorf("instrument: interval %d < 1", interval)
	}
	defer func() {
		// Every read is bounds-checked; this is the last line of defence
		// that turns a missed check into an error instead of a crash.
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("instrument: %w: %v", ErrMalformed, r)
		}
	}()
	secs, err := split(bin)
	if err != nil {
		return nil, err
	}
	w := &rewriter{interval: interval}
	if err := w.scan(secs); err != nil {
		return nil, err
	}
	return w.emit(secs)
}

func malformed(format string, args ...any) error {
	return fmt.Errorf("instrument: %w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

// split checks the header and cuts the module into its sections.
func split(bin []byte) ([]section, error) {
	if len(bin) < 8 || string(bin[:4]) != "\x00asm" {
		return nil, malformed("not a WebAssembly binary (no \\0asm magic)")
	}
	if string(bin[4:8]) != "\x01\x00\x00\x00" {
		return nil, malformed("binary format version %x, want 1", bin[4:8])
	}
	r := &reader{b: bin, pos: 8}
	var secs []section
	last := 0
	for !r.done() {
		id := r.byte()
		size := r.u32()
		body := r.bytes(int(size))
		if r.err != nil {
			return nil, r.err
		}
		if id != secCustom {
			o, ok := order[id]
			if !ok {
				return nil, malformed("unknown section id %d", id)
			}
			if o <= last {
				return nil, malformed("section %d out of order or repeated", id)
			}
			last = o
		}
		secs = append(secs, section{id, body})
	}
	return secs, nil
}

// rewriter holds what scan learns about the module and emit needs.
type rewriter struct {
	interval int32

	nTypes       uint32 // entries of the type section
	nFuncImports uint32 // K: index of the new import; defined functions shift by one
	nGlobals     uint32 // imported + defined: index of the new global
	yieldType    uint32 // type index of () -> (), appended
}

// scan counts types, imported functions and globals.
func (w *rewriter) scan(secs []section) error {
	for _, s := range secs {
		r := &reader{b: s.body}
		switch s.id {
		case secType:
			w.nTypes = r.u32()
		case secImport:
			n := r.u32()
			for i := uint32(0); i < n && r.err == nil; i++ {
				r.name()
				r.name()
				switch kind := r.byte(); kind {
				case 0x00: // func
					r.u32()
					w.nFuncImports++
				case 0x01: // table
					r.refType()
					r.limits()
				case 0x02: // memory
					r.limits()
				case 0x03: // global
					r.valType()
					r.byte()
					w.nGlobals++
				case 0x04: // tag
					r.byte()
					r.u32()
				default:
					r.fail("import %d: unknown kind %#x", i, kind)
				}
			}
		case secGlobal:
			n := r.u32()
			for i := uint32(0); i < n && r.err == nil; i++ {
				r.valType()
				r.byte()
				skipConstExpr(r)
				w.nGlobals++
			}
		}
		if r.err != nil {
			return fmt.Errorf("section %d: %w", s.id, r.err)
		}
	}
	w.yieldType = w.nTypes
	return nil
}

// fn maps a function index of the input to the output.
func (w *rewriter) fn(i uint32) uint32 {
	if i >= w.nFuncImports {
		return i + 1
	}
	return i
}

// emit writes the instrumented module.
func (w *rewriter) emit(secs []section) ([]byte, error) {
	size := 8
	for _, s := range secs {
		size += len(s.body) + 6
	}
	out := make([]byte, 0, size+size/8+64)
	out = append(out, "\x00asm\x01\x00\x00\x00"...)
	have := map[byte]bool{}
	for _, s := range secs {
		have[s.id] = true
	}
	put := func(id byte, body []byte) {
		out = append(out, id)
		out = appendU32(out, uint32(len(body)))
		out = append(out, body...)
	}
	// Sections the input lacks are created at their place: before the
	// first section that must follow them.
	missing := func(before byte) {
		if !have[secType] && order[before] > order[secType] {
			have[secType] = true
			put(secType, w.typeSection(nil))
		}
		if !have[secImport] && order[before] > order[secImport] {
			have[secImport] = true
			put(secImport, w.importSection(nil))
		}
		if !have[secGlobal] && order[before] > order[secGlobal] {
			have[secGlobal] = true
			put(secGlobal, w.globalSection(nil))
		}
	}
	for _, s := range secs {
		if s.id != secCustom {
			missing(s.id)
		}
		var body []byte
		var err error
		switch s.id {
		case secCustom:
			body, err = w.custom(s.body)
			if body == nil && err == nil {
				continue // dropped
			}
		case secType:
			body = w.typeSection(s.body)
		case secImport:
			body = w.importSection(s.body)
		case secGlobal:
			body, err = w.globalSectionOf(s.body)
		case secExport:
			body, err = w.exportSection(s.body)
		case secStart:
			body, err = w.startSection(s.body)
		case secElement:
			body, err = w.elementSection(s.body)
		case secCode:
			body, err = w.codeSection(s.body)
		case secData:
			body, err = w.dataSection(s.body, have[secDataCount])
		default:
			body = s.body
		}
		if err != nil {
			return nil, fmt.Errorf("section %d: %w", s.id, err)
		}
		put(s.id, body)
	}
	missing(secData + 100) // past every section: create what is still missing
	return out, nil
}

// typeSection appends the type () -> () to body (nil: no type section).
func (w *rewriter) typeSection(body []byte) []byte {
	var rest []byte
	if body != nil {
		r := &reader{b: body}
		r.u32()
		rest = body[r.pos:]
	}
	b := appendU32(nil, w.nTypes+1)
	b = append(b, rest...)
	return append(b, 0x60, 0x00, 0x00)
}

// importSection appends the yield import to body (nil: no import section).
// It goes last, so it gets index nFuncImports and only defined functions
// move.
func (w *rewriter) importSection(body []byte) []byte {
	var n uint32
	var rest []byte
	if body != nil {
		r := &reader{b: body}
		n = r.u32()
		rest = body[r.pos:]
	}
	b := appendU32(nil, n+1)
	b = append(b, rest...)
	b = appendName(b, ImportModule)
	b = appendName(b, ImportName)
	b = append(b, 0x00)
	return appendU32(b, w.yieldType)
}

// counterGlobal is the new global: (mut i32) initialised to interval.
func (w *rewriter) counterGlobal(b []byte) []byte {
	b = append(b, 0x7f, 0x01, 0x41)
	b = appendS32(b, w.interval)
	return append(b, 0x0b)
}

func (w *rewriter) globalSection([]byte) []byte {
	return w.counterGlobal(appendU32(nil, 1))
}

// globalSectionOf rewrites the initialisers (ref.func) and appends the
// counter.
func (w *rewriter) globalSectionOf(body []byte) ([]byte, error) {
	r := &reader{b: body}
	n := r.u32()
	b := appendU32(nil, n+1)
	for i := uint32(0); i < n && r.err == nil; i++ {
		start := r.pos
		r.valType()
		r.byte()
		b = append(b, body[start:r.pos]...)
		var err error
		if b, err = w.expr(b, r, false); err != nil {
			return nil, fmt.Errorf("global %d: %w", i, err)
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	if !r.done() {
		return nil, malformed("%d trailing bytes", len(body)-r.pos)
	}
	return w.counterGlobal(b), nil
}

func (w *rewriter) exportSection(body []byte) ([]byte, error) {
	r := &reader{b: body}
	n := r.u32()
	b := appendU32(nil, n)
	for i := uint32(0); i < n && r.err == nil; i++ {
		start := r.pos
		r.name()
		kind := r.byte()
		b = append(b, body[start:r.pos]...)
		idx := r.u32()
		switch kind {
		case 0x00:
			idx = w.fn(idx)
		case 0x03:
			// The counter must stay out of reach: an export of the index
			// it takes was invalid before the rewrite.
			if idx >= w.nGlobals {
				return nil, malformed("export %d: global index %d out of range", i, idx)
			}
		}
		b = appendU32(b, idx)
	}
	if r.err != nil {
		return nil, r.err
	}
	if !r.done() {
		return nil, malformed("%d trailing bytes", len(body)-r.pos)
	}
	return b, nil
}

func (w *rewriter) startSection(body []byte) ([]byte, error) {
	r := &reader{b: body}
	idx := r.u32()
	if r.err != nil {
		return nil, r.err
	}
	if !r.done() {
		return nil, malformed("%d trailing bytes", len(body)-r.pos)
	}
	return appendU32(nil, w.fn(idx)), nil
}

func (w *rewriter) elementSection(body []byte) ([]byte, error) {
	r := &reader{b: body}
	n := r.u32()
	b := appendU32(nil, n)
	for i := uint32(0); i < n && r.err == nil; i++ {
		flags := r.u32()
		b = appendU32(b, flags)
		if flags > 7 {
			return nil, malformed("element segment %d: flags %d", i, flags)
		}
		var err error
		if flags&2 != 0 && flags&1 == 0 { // explicit table index
			b = appendU32(b, r.u32())
		}
		if flags&1 == 0 { // active: offset expression
			if b, err = w.expr(b, r, false); err != nil {
				return nil, fmt.Errorf("element segment %d: %w", i, err)
			}
		}
		if flags&3 != 0 { // elemkind or reftype
			b = append(b, r.byte())
		}
		count := r.u32()
		b = appendU32(b, count)
		for j := uint32(0); j < count && r.err == nil; j++ {
			if flags&4 == 0 {
				b = appendU32(b, w.fn(r.u32()))
				continue
			}
			if b, err = w.expr(b, r, false); err != nil {
				return nil, fmt.Errorf("element segment %d: %w", i, err)
			}
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	if !r.done() {
		return nil, malformed("%d trailing bytes", len(body)-r.pos)
	}
	return b, nil
}

func (w *rewriter) codeSection(body []byte) ([]byte, error) {
	r := &reader{b: body}
	n := r.u32()
	out := make([]byte, 0, len(body)+len(body)/8+16)
	out = appendU32(out, n)
	var fb []byte
	for i := uint32(0); i < n && r.err == nil; i++ {
		size := r.u32()
		fr := &reader{b: r.bytes(int(size))}
		if r.err != nil {
			break
		}
		fb = fb[:0]
		// locals: vec(count u32, valtype)
		nl := fr.u32()
		for j := uint32(0); j < nl && fr.err == nil; j++ {
			fr.u32()
			fr.valType()
		}
		if fr.err != nil {
			return nil, fmt.Errorf("function %d: %w", i, fr.err)
		}
		fb = append(fb, fr.b[:fr.pos]...)
		// A Go function's body is one loop; its header check counts the
		// entry too.
		if fr.pos >= len(fr.b) || fr.b[fr.pos] != 0x03 {
			fb = w.check(fb)
		}
		var err error
		if fb, err = w.expr(fb, fr, true); err != nil {
			return nil, fmt.Errorf("function %d: %w", i, err)
		}
		if !fr.done() {
			return nil, malformed("function %d: %d bytes after its end", i, len(fr.b)-fr.pos)
		}
		out = appendU32(out, uint32(len(fb)))
		out = append(out, fb...)
	}
	if r.err != nil {
		return nil, r.err
	}
	if !r.done() {
		return nil, malformed("%d trailing bytes", len(body)-r.pos)
	}
	return out, nil
}

// check appends the countdown: counter -= 1; if counter == 0 { counter =
// interval; yield() }. It leaves the operand stack as it found it.
func (w *rewriter) check(b []byte) []byte {
	g := w.nGlobals
	b = append(b, 0x23) // global.get
	b = appendU32(b, g)
	b = append(b, 0x41, 0x01, 0x6b, 0x24) // i32.const 1; i32.sub; global.set
	b = appendU32(b, g)
	b = append(b, 0x23)
	b = appendU32(b, g)
	b = append(b, 0x45, 0x04, 0x40, 0x41) // i32.eqz; if (empty); i32.const
	b = appendS32(b, w.interval)
	b = append(b, 0x24) // global.set
	b = appendU32(b, g)
	b = append(b, 0x10) // call
	b = appendU32(b, w.nFuncImports)
	return append(b, 0x0b) // end
}

// custom keeps custom sections but the name section, whose function
// indices would be off by one (it only serves stack traces). nil, nil
// drops the section.
func (w *rewriter) custom(body []byte) ([]byte, error) {
	r := &reader{b: body}
	name := r.name()
	if r.err != nil {
		return nil, r.err
	}
	if name == "name" {
		return nil, nil
	}
	return body, nil
}

// expr copies one expression (up to and including its final end) from r
// to b, remapping function indices; in a function body (code) it also
// inserts a check after every loop header, and bounds global indices.
func (w *rewriter) expr(b []byte, r *reader, code bool) ([]byte, error) {
	depth := 0
	last := r.pos
	flush := func() {
		b = append(b, r.b[last:r.pos]...)
		last = r.pos
	}
	for {
		if r.err != nil {
			return nil, r.err
		}
		if r.done() {
			return nil, malformed("expression without end")
		}
		op := r.byte()
		switch {
		case op == 0x02 || op == 0x04: // block, if
			r.s33()
			depth++
		case op == 0x03: // loop
			r.s33()
			depth++
			if code {
				flush()
				b = w.check(b)
			}
		case op == 0x05 || op == 0x00 || op == 0x01 || op == 0x0f || op == 0x1a || op == 0x1b || op == 0xd1:
		case op == 0x0b: // end
			if depth == 0 {
				flush()
				return b, r.err
			}
			depth--
		case op == 0x0c || op == 0x0d: // br, br_if
			r.u32()
		case op == 0x0e: // br_table
			n := r.u32()
			for i := uint32(0); i <= n && r.err == nil; i++ {
				r.u32()
			}
		case op == 0x10 || op == 0x12 || op == 0xd2: // call, return_call, ref.func
			r.pos-- // copy up to the opcode, then rewrite its index
			flush()
			r.pos++
			idx := r.u32()
			b = append(b, op)
			b = appendU32(b, w.fn(idx))
			last = r.pos
		case op == 0x11 || op == 0x13: // call_indirect, return_call_indirect
			r.u32()
			r.u32()
		case op == 0x1c: // select t*
			n := r.u32()
			for i := uint32(0); i < n && r.err == nil; i++ {
				r.valType()
			}
		case op >= 0x20 && op <= 0x22: // local.*
			r.u32()
		case op == 0x23 || op == 0x24: // global.get, global.set
			if idx := r.u32(); idx >= w.nGlobals {
				// Valid only once the counter exists: the input must not
				// reach it.
				return nil, malformed("global index %d out of range", idx)
			}
		case op == 0x25 || op == 0x26: // table.get, table.set
			r.u32()
		case op >= 0x28 && op <= 0x3e: // loads and stores
			r.memarg()
		case op == 0x3f || op == 0x40: // memory.size, memory.grow
			r.u32()
		case op == 0x41:
			r.s32()
		case op == 0x42:
			r.s64()
		case op == 0x43:
			r.bytes(4)
		case op == 0x44:
			r.bytes(8)
		case op >= 0x45 && op <= 0xc4: // numeric, sign extension
		case op == 0xd0: // ref.null
			r.s33()
		case op == 0xfc:
			if err := miscImmediates(r, r.u32()); err != nil {
				return nil, err
			}
		case op == 0xfd:
			if err := simdImmediates(r, r.u32()); err != nil {
				return nil, err
			}
		default:
			return nil, malformed("unsupported opcode %#x at offset %d", op, r.pos-1)
		}
	}
}

// skipConstExpr skips a constant expression while scanning.
func skipConstExpr(r *reader) {
	w := &rewriter{nGlobals: ^uint32(0)}
	if _, err := w.expr(nil, r, false); err != nil && r.err == nil {
		r.err = err
	}
}

// miscImmediates skips the immediates of a 0xfc-prefixed instruction.
func miscImmediates(r *reader, sub uint32) error {
	switch {
	case sub <= 7: // saturating truncation
	case sub == 8: // memory.init
		r.u32()
		r.u32()
	case sub == 9: // data.drop
		r.u32()
	case sub == 10: // memory.copy
		r.u32()
		r.u32()
	case sub == 11: // memory.fill
		r.u32()
	case sub == 12: // table.init
		r.u32()
		r.u32()
	case sub == 13: // elem.drop
		r.u32()
	case sub == 14: // table.copy
		r.u32()
		r.u32()
	case sub >= 15 && sub <= 17: // table.grow, table.size, table.fill
		r.u32()
	default:
		return malformed("unsupported opcode 0xfc %d at offset %d", sub, r.pos)
	}
	return r.err
}

// simdImmediates skips the immediates of a 0xfd-prefixed instruction.
func simdImmediates(r *reader, sub uint32) error {
	switch {
	case sub <= 11, sub == 92, sub == 93: // loads, stores
		r.memarg()
	case sub == 12 || sub == 13: // v128.const, i8x16.shuffle
		r.bytes(16)
	case sub >= 21 && sub <= 34: // extract_lane, replace_lane
		r.byte()
	case sub >= 84 && sub <= 91: // load_lane, store_lane
		r.memarg()
		r.byte()
	case sub <= 255:
	default:
		return malformed("unsupported opcode 0xfd %d at offset %d", sub, r.pos)
	}
	return r.err
}
