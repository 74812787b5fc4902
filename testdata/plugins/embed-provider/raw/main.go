//go:build wasip1

// Command raw is a wasm provider plugin that embeds, written by hand
// against sdk/PROTOCOL-wasm.md instead of through the sdk, so that it can
// answer provider.embed with bytes no sdk.Embedder could produce. The
// host's decoder and checks of a wasm plugin's answer are what it tests.
// Its provider.embed answer is, by the request's config:
//
//	answer        that exact response envelope (NaN, garbage, a wrong shape)
//	answer_bytes  a well-formed envelope of at least that many bytes
//	neither       the vector [1, i] for input i
//
// Build it with GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared.
package main

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unsafe"
)

// Name is the plugin's name, as its describe answer gives it.
const Name = "embed-raw"

var (
	req  []byte // the sextant_request buffer
	resp []byte // the last answer, kept until the next call
)

//go:wasmexport sextant_api
func api() int32 { return 1 }

//go:wasmexport sextant_request
func request(size int32) int32 {
	if int(size) > cap(req) {
		req = make([]byte, max(size, 1))
	}
	req = req[:cap(req)]
	return int32(uintptr(unsafe.Pointer(&req[0])))
}

//go:wasmexport sextant_call
func call(ptr, size int32) int64 {
	if len(req) == 0 || uintptr(ptr) != uintptr(unsafe.Pointer(&req[0])) || int(size) > len(req) || size < 0 {
		resp = []byte(`{"error":{"code":"bad_request","message":"request outside the sextant_request buffer"}}`)
	} else {
		resp = answer(req[:size])
	}
	return int64(uintptr(unsafe.Pointer(&resp[0])))<<32 | int64(len(resp))
}

// answer answers one request envelope.
func answer(in []byte) []byte {
	var env struct {
		Method string `json:"method"`
		Params struct {
			Input  []string `json:"input"`
			Config struct {
				Answer      string `json:"answer"`
				AnswerBytes int    `json:"answer_bytes"`
			} `json:"config"`
		} `json:"params"`
	}
	if err := json.Unmarshal(in, &env); err != nil {
		return fail("malformed request: " + err.Error())
	}
	switch env.Method {
	case "describe":
		return []byte(`{"result":{"name":"` + Name + `","kind":"provider","version":"0.1.0","api":1,"embed":true}}`)
	case "provider.chat":
		return []byte(`{"result":{"text":"ok","finish_reason":"stop"}}`)
	case "provider.embed":
	default:
		return fail("unknown method " + env.Method)
	}
	c := env.Params.Config
	switch {
	case c.Answer != "":
		return []byte(c.Answer)
	case c.AnswerBytes > 0:
		// {"result":{"vectors":[[0,0,…,0],[0]]}}, in one allocation: a
		// growing buffer would run the module out of memory first.
		b := make([]byte, 0, c.AnswerBytes+32)
		b = append(b, `{"result":{"vectors":[[0`...)
		for len(b) < c.AnswerBytes {
			b = append(b, ",0"...)
		}
		return append(b, `],[0]]}}`...)
	}
	var b bytes.Buffer
	b.WriteString(`{"result":{"vectors":[`)
	for i := range env.Params.Input {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("[1," + strconv.Itoa(i) + "]")
	}
	b.WriteString(`]}}`)
	return b.Bytes()
}

// fail is an error envelope saying msg.
func fail(msg string) []byte {
	q, _ := json.Marshal(msg)
	return []byte(`{"error":{"code":"bad_request","message":` + string(q) + `}}`)
}

func main() {}
