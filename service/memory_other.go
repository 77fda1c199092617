//go:build !linux && !darwin

package service

// machineMemory is the machine's memory in bytes: unknown here.
func machineMemory() int64 { return 0 }
