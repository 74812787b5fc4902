//go:build wasip1

package sdk

import (
	"encoding/json"
	"fmt"
	"unsafe"
)

//go:wasmimport sextant log
func hostLog(level int32, ptr unsafe.Pointer, size int32)

//go:wasmimport sextant http_request
func hostHTTPRequest(ptr unsafe.Pointer, size int32) int32

//go:wasmimport sextant http_response
func hostHTTPResponse(ptr unsafe.Pointer)

func logHost(level int32, msg string) {
	if msg == "" {
		return
	}
	b := []byte(msg)
	hostLog(level, unsafe.Pointer(&b[0]), int32(len(b)))
}

func doHTTP(req *HTTPRequest) (*HTTPResponse, error) {
	in, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode http request: %w", err)
	}
	n := hostHTTPRequest(unsafe.Pointer(&in[0]), int32(len(in)))
	if n <= 0 {
		return nil, fmt.Errorf("http: host returned no response")
	}
	out := make([]byte, n)
	hostHTTPResponse(unsafe.Pointer(&out[0]))
	var resp HTTPResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		return nil, fmt.Errorf("decode http response: %w", err)
	}
	if resp.Error != "" {
		return nil, fmt.Errorf("http %s %s: %s", req.Method, req.URL, resp.Error)
	}
	return &resp, nil
}
