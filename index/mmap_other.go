//go:build !unix

package index

import (
	"fmt"
	"os"
)

// mapFile reads the file at path whole where files cannot be mapped.
func mapFile(path string) ([]byte, func() error, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("index: read postings: %w", err)
	}
	return data, func() error { return nil }, nil
}
