// Command sextant runs self-improving agent pipelines. See host/cli.
package main

import "github.com/sextant-dev/sextant/host/cli"

func main() { cli.Main() }
