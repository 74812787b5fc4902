package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestFresh fails when sdk/wire2_gen.go is not what the generator writes
// from today's sdk types: run `go generate ./sdk/...` after changing a
// wire type.
func TestFresh(t *testing.T) {
	dir := filepath.Join("..", "..")
	want, err := Generate(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, Output))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("sdk/%s is stale: run `go generate ./sdk/...`", Output)
	}
}

// TestRefusesUnknownShapes: a wire type the codec cannot carry faithfully
// is a generation error naming the field, not silently dropped.
func TestRefusesUnknownShapes(t *testing.T) {
	dir := t.TempDir()
	src := "package sdk\n\ntype StartRequest struct {\n\tC chan int `json:\"c\"`\n}\n"
	for _, r := range Roots[1:] {
		src += "type " + r + " struct{}\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "x.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Generate(dir)
	if err == nil || err.Error() != "StartRequest.C: unsupported type chan int" {
		t.Fatalf("err = %v", err)
	}
}
