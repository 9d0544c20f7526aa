//go:build !linux

package sink

import (
	"errors"
	"os"
)

func openDirect(path string) *os.File { return nil }

func pwriteDirect(fd int, p []byte, off int64) (int, error) {
	return 0, errors.New("no O_DIRECT on this system")
}
