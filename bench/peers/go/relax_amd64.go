package main

// cpuRelax executes one PAUSE instruction (relax_amd64.s).
func cpuRelax()
