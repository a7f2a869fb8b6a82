// sl-peer-go: Go channels as contenders of `sl-bench chan`; the standard
// library only. bench/remote.cmake builds it with GOTOOLCHAIN=local and
// GOPROXY=off, so nothing is downloaded.
module sluice/bench/sl-peer-go

go 1.19
