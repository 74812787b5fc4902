package tool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkToolCall measures one tools/call round trip through a Set.
// mcp-stdio: the npm filesystem server over stdio reading a 1 KiB file
// (the Node server's own work is part of the figure).
func BenchmarkToolCall(b *testing.B) {
	b.Run("mcp-stdio", func(b *testing.B) {
		dir, _ := filepath.EvalSymlinks(b.TempDir())
		f := filepath.Join(dir, "note.txt")
		if err := os.WriteFile(f, bytes.Repeat([]byte("sextant "), 128), 0o644); err != nil {
			b.Fatal(err)
		}
		s := filesSet(b, dir, nil)
		ctx := context.Background()
		args, _ := json.Marshal(map[string]string{"path": f})
		if _, err := s.Call(ctx, "files", "read_text_file", args); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			res, err := s.Call(ctx, "files", "read_text_file", args)
			if err != nil || res.IsError {
				b.Fatal(res, err)
			}
		}
	})
}
