//go:build race

package bpmn

const raceEnabled = true
