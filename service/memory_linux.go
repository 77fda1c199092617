package service

import "os"

// machineMemory is the machine's memory in bytes, 0 when unknown.
func machineMemory() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	return memTotal(b)
}
