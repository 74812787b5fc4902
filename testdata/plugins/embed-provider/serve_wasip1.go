//go:build wasip1

package main

import "github.com/sextant-dev/sextant/sdk"

func serve() { sdk.Main() }
