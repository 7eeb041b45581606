//go:build !notemporal

package temporalengine

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"

	"github.com/ensemble-run/ensemble/internal/readcap"
)

// Large values go by reference (docs/temporal.md#large-outputs): a
// Temporal payload is capped (2 MB by default), and a run's state, an
// execution's context or an output can exceed it. Blobs is a payload codec
// that writes each payload larger than Limit to a file of Dir named by its
// sha256, and sends that name instead. Every worker and client of the
// cluster must use the same Dir (a shared volume), as they see the same
// ensemble files.
type Blobs struct {
	Dir   string
	Limit int // bytes; 0 is DefaultBlobLimit
}

// DefaultBlobLimit is the size above which a payload goes by reference:
// well under the server's default cap of 2 MB per payload.
const DefaultBlobLimit = 512 << 10

const blobEncoding = "binary/ensemble-blob-ref"

// maxBlob is the largest payload read back from a blob file: Temporal's
// own payloads are far smaller, and a blob is one execution's input or
// result.
const maxBlob = 4 << 30

// DataConverter is the default converter with b's codec: give it to every
// client and worker (client.Options.DataConverter).
func (b *Blobs) DataConverter() converter.DataConverter {
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), b)
}

// Encode implements converter.PayloadCodec.
func (b *Blobs) Encode(ps []*commonpb.Payload) ([]*commonpb.Payload, error) {
	limit := b.Limit
	if limit <= 0 {
		limit = DefaultBlobLimit
	}
	out := make([]*commonpb.Payload, len(ps))
	for i, p := range ps {
		if proto.Size(p) <= limit {
			out[i] = p
			continue
		}
		data, err := proto.Marshal(p)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(data)
		name := hex.EncodeToString(sum[:])
		path := filepath.Join(b.Dir, name)
		if _, err := os.Stat(path); err != nil {
			if err := os.MkdirAll(b.Dir, 0o755); err != nil {
				return nil, err
			}
			tmp, err := os.CreateTemp(b.Dir, name+".*")
			if err != nil {
				return nil, err
			}
			_, werr := tmp.Write(data)
			if cerr := tmp.Close(); werr == nil {
				werr = cerr
			}
			if werr == nil {
				werr = os.Rename(tmp.Name(), path)
			}
			if werr != nil {
				os.Remove(tmp.Name())
				return nil, fmt.Errorf("writing a large payload to %s: %w", b.Dir, werr)
			}
		}
		out[i] = &commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(blobEncoding)}, Data: []byte(name)}
	}
	return out, nil
}

// Decode implements converter.PayloadCodec.
func (b *Blobs) Decode(ps []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(ps))
	for i, p := range ps {
		if string(p.GetMetadata()[converter.MetadataEncoding]) != blobEncoding {
			out[i] = p
			continue
		}
		name := string(p.Data)
		data, err := readcap.ReadFile(filepath.Join(b.Dir, filepath.Base(name)), maxBlob)
		if err != nil {
			return nil, fmt.Errorf("a payload sent by reference: %w", err)
		}
		if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != name {
			return nil, fmt.Errorf("a payload sent by reference: %s does not hold what was written", name)
		}
		var q commonpb.Payload
		if err := proto.Unmarshal(data, &q); err != nil {
			return nil, err
		}
		out[i] = &q
	}
	return out, nil
}
