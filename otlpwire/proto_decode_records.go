package otlpwire

import (
	"unsafe"

	"github.com/otelstep/otelstep/pipeline"
	"google.golang.org/protobuf/encoding/protowire"
)

// The record decoders (SpanDecoder, LogRecordDecoder: generated) decode
// the records a batch kept (pipeline.Records) one at a time into a scratch
// decoder.

// trusted readies d, a scratch decoder, for one checked record.
//
// Strings are not checked for UTF-8 again: the decoder checked every
// record it kept when it was received. A string that is not UTF-8 (in a
// record from elsewhere) comes back as it is, and the OTLP/JSON encoder
// writes U+FFFD for its bad bytes. Nor are the ids' lengths (ValidID):
// they come back as they are.
func (d *decoder) trusted(rec []byte) *decoder {
	d.rewindItem()
	d.checked = true
	// Invariant: rec, a record of a batch the caller holds, is not written
	// while the caller may read the decoded item (until the next Decode or
	// Reset); its memory is the batch's request body (getDecoder).
	// TestOwnedDecodeAliasesBody.
	d.b, d.s, d.n = rec, unsafe.String(unsafe.SliceData(rec), len(rec)), 0
	return d
}

// scratchDecoder returns d's scratch decoder, reading d's body: n stays 0,
// so a scratch slab's chunks are sized by use, not by the rest of the body
// (see slab.rewind).
func (d *decoder) scratchDecoder() *decoder {
	sd := d.scratch
	if sd == nil {
		sd = new(decoder)
		d.scratch = sd
	}
	sd.b, sd.s, sd.lenient = d.b, d.s, d.lenient
	sd.rewindItem()
	return sd
}

// gatherRecords copies the records (field num) of the message in [p,
// end), all checked already, into one buffer.
func (d *decoder) gatherRecords(p, end int, num protowire.Number) pipeline.Records {
	var out pipeline.Records
	for b := d.b[:end]; p < end; {
		n, typ, _, _, _, next := readField(b, p)
		if next < 0 {
			return out
		}
		if n == num && typ == protowire.BytesType {
			out = append(out, b[p:next]...)
		}
		p = next
	}
	return out
}
