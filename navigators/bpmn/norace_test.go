//go:build !race

package bpmn

const raceEnabled = false
