//go:build !amd64

package main

// cpuRelax: no spin-wait hint on this architecture from Go; an empty call.
func cpuRelax() {}
