package index

import (
	"bytes"
	"testing"

	"github.com/operator-framework/operator-registry/pkg/api"
	"google.golang.org/grpc/encoding"
	protocodec "google.golang.org/grpc/encoding/proto"
	"google.golang.org/protobuf/proto"
)

// A pre-encoded answer is the same bytes whichever codec sends it, and
// twice in a row: the codec's buffer is not consumed by a send.
func TestCodecSendsEncodedAnswers(t *testing.T) {
	bundle := &api.Bundle{CsvName: "w.v1.0.0", PackageName: "w", ChannelName: "stable", Version: "1.0.0", Replaces: "w.v0.9.0"}
	want, err := proto.Marshal(bundle)
	if err != nil {
		t.Fatal(err)
	}
	answer, err := encoded(bundle)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		codec encoding.CodecV2
		msg   any
	}{
		{"ours, an encoded answer", Codec(), answer},
		{"ours, again", Codec(), answer},
		{"ours, any other message", Codec(), bundle},
		{"gRPC's proto codec, an encoded answer", encoding.GetCodecV2(protocodec.Name), answer},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data, err := tc.codec.Marshal(tc.msg)
			if err != nil {
				t.Fatal(err)
			}
			got := data.Materialize()
			data.Free()
			if !bytes.Equal(got, want) {
				t.Errorf("sent %x, want %x", got, want)
			}
		})
	}
	var decoded api.Bundle
	data, err := Codec().Marshal(answer)
	if err != nil {
		t.Fatal(err)
	}
	if err := Codec().Unmarshal(data, &decoded); err != nil || !proto.Equal(&decoded, bundle) {
		t.Errorf("decoded %v (%v), want %v", &decoded, err, bundle)
	}
}
