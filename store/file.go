package store

// Run ids, and the checks of a database file before SQLite opens it.

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// NewID returns a new run id: the time it started (UTC), and a random
// suffix so that two runs started in the same second differ.
//
// No two ids this process makes are the same: its random part is drawn
// again when it was drawn already within the same second (a server
// starting thousands of runs a second drew the same one now and then, and
// refused the second run as a run that exists).
func NewID() string {
	idMu.Lock()
	defer idMu.Unlock()
	sec := time.Now().UTC().Format("20060102-150405")
	if sec != idSecond {
		idSecond, idDrawn = sec, map[[3]byte]bool{}
	}
	var b [3]byte
	for {
		rand.Read(b[:])
		if !idDrawn[b] {
			idDrawn[b] = true
			return sec + fmt.Sprintf("-%x", b)
		}
	}
}

var (
	idMu     sync.Mutex
	idSecond string           // the second of the ids drawn
	idDrawn  map[[3]byte]bool // their random parts
)

// CheckID rejects a run id a person could not type back: empty, too long,
// or with characters other than letters, digits and -_.:@+
func CheckID(id string) error {
	if id == "" || len(id) > 100 || strings.Trim(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:@+") != "" {
		return fmt.Errorf("a run id is 1 to 100 letters, digits and -_.:@+, got %q", id)
	}
	return nil
}

// timeFormat is how times are stored: RFC 3339 in UTC with a fixed number
// of digits, so that the text sorts as the times do.
const timeFormat = "2006-01-02T15:04:05.000000000Z07:00"

// checkHeader rejects a database whose header no state database has,
// whatever command opens it: resume, whose writes would find the damage
// (SQLite checks the pages it changes more closely than those it reads),
// and state show, list and export, whose reads could return what the
// damage made of the data. The fields checked:
//
//   - the file format versions (bytes 18 and 19): 1 or 2. SQLite refuses
//     a read version above 2 itself, but opens a file of a write version
//     above 2 read-only, and resume then failed on its first write.
//   - the bytes reserved at the end of each page (byte 20): 0, as every
//     state database is created (no extension that keeps a checksum or a
//     nonce there is used). SQLite lays out the cells of a page within
//     the rest, so a changed value misplaces them: reads may go on, and a
//     write finds the database malformed.
func checkHeader(file string) error {
	h, _, err := readHeader(file)
	if err != nil {
		return err
	}
	if w, r := h[18], h[19]; w < 1 || w > 2 || r < 1 || r > 2 {
		return fmt.Errorf("the database is corrupt or truncated (database disk image is malformed: its header's file format versions are %d and %d, not 1 or 2)", w, r)
	}
	if h[20] != 0 {
		return fmt.Errorf("the database is corrupt or truncated (database disk image is malformed: its header reserves %d bytes at the end of each page, where a state database has none)", h[20])
	}
	return nil
}

// checkSize rejects a database file shorter than its header says, or not a
// whole number of pages: a truncated file, whose missing pages SQLite
// would only notice when it reads them (or never, when they were free).
//
// A database with a -wal file beside it is being written (or was, by a
// process that was killed): a checkpoint may have written page 1 before the
// pages that extend the file, so the sizes may disagree for a moment, and
// SQLite's own checks are left to judge it. The moment may also end just
// as the file is read (the checkpoint done, the WAL removed), so a file
// found short is looked at again a few times: a truncated file stays so.
func checkSize(file string) error {
	var err error
	for try := range 5 {
		if try > 0 {
			time.Sleep(time.Duration(try) * 10 * time.Millisecond)
		}
		if err = checkSizeOnce(file); err == nil {
			return nil
		}
	}
	return err
}

// readHeader reads the SQLite header of file (its first 100 bytes), and
// its size.
func readHeader(file string) (h [100]byte, size int64, err error) {
	f, err := os.Open(file)
	if err != nil {
		return h, 0, unwrapPath(err)
	}
	defer f.Close()
	if _, err := io.ReadFull(f, h[:]); err != nil {
		return h, 0, errors.New("the database is corrupt or truncated (its header is cut short)")
	}
	fi, err := f.Stat()
	if err != nil {
		return h, 0, unwrapPath(err)
	}
	return h, fi.Size(), nil
}

func checkSizeOnce(file string) error {
	if _, err := os.Lstat(file + "-wal"); err == nil {
		return nil
	}
	h, size, err := readHeader(file)
	if err != nil {
		return err
	}
	pageSize := int64(binary.BigEndian.Uint16(h[16:18]))
	if pageSize == 1 {
		pageSize = 65536
	}
	if pageSize < 512 || pageSize&(pageSize-1) != 0 {
		return errors.New("the database is corrupt or truncated (its page size is not a power of two)")
	}
	pages := int64(binary.BigEndian.Uint32(h[28:32]))
	// The page count is valid when the change counter matches the
	// version-valid-for number (SQLite's file format).
	valid := binary.BigEndian.Uint32(h[24:28]) == binary.BigEndian.Uint32(h[92:96])
	if size%pageSize != 0 || valid && size < pages*pageSize {
		return fmt.Errorf("the database is corrupt or truncated (%d bytes, its header says %d pages of %d)", size, pages, pageSize)
	}
	return nil
}
