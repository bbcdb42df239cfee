// SPDX-License-Identifier: MIT

// Command receiver accepts the OTLP profiles the OpenTelemetry eBPF profiler
// exports over gRPC (bench/peer.sh) and appends, per process, its samples as
// folded stacks to DIR/PID.folded: "root;...;leaf COUNT" per line, one line per
// stack per export (sum the counts of equal stacks). A frame with a function
// name (the interpreters' frames the peer names itself) is written as that name;
// a native frame, which the peer leaves to its backend to symbolize, as
// "[FILE+0xOFFSET]". It uses the pprofileotlp package of the module version the
// peer itself builds with (go.mod pins both), so both ends speak one schema.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
	"google.golang.org/grpc"
	_ "google.golang.org/grpc/encoding/gzip" // the peer compresses its exports
)

type receiver struct {
	pprofileotlp.UnimplementedGRPCServer
	dir     string
	mu      sync.Mutex
	exports int
}

// frameName names the location at index li of the dictionary.
func frameName(dic pprofile.ProfilesDictionary, li int32) string {
	locs := dic.LocationTable()
	if li < 0 || int(li) >= locs.Len() {
		return "[bad location]"
	}
	loc := locs.At(int(li))
	strs := dic.StringTable()
	str := func(i int32) string {
		if i <= 0 || int(i) >= strs.Len() {
			return ""
		}
		return strs.At(int(i))
	}
	if loc.Lines().Len() > 0 {
		fi := loc.Lines().At(0).FunctionIndex()
		if fi >= 0 && int(fi) < dic.FunctionTable().Len() {
			if n := str(dic.FunctionTable().At(int(fi)).NameStrindex()); n != "" {
				return clean(n)
			}
		}
	}
	file := "?"
	if mi := loc.MappingIndex(); mi > 0 && int(mi) < dic.MappingTable().Len() {
		if f := str(dic.MappingTable().At(int(mi)).FilenameStrindex()); f != "" {
			file = filepath.Base(f)
		}
	}
	return fmt.Sprintf("[%s+0x%x]", clean(file), loc.Address())
}

// clean keeps a name on one folded line: no separators, spaces or newlines.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case ';', ' ', '\n', '\r', '\t':
			return '_'
		}
		return r
	}, s)
}

// pidOf reads process.pid from a resource's attributes; -1 without one.
func pidOf(rp pprofile.ResourceProfiles) int64 {
	v, ok := rp.Resource().Attributes().Get("process.pid")
	if !ok {
		return -1
	}
	return v.Int()
}

// fold returns, per pid, the folded lines of one export.
func fold(pd pprofile.Profiles) map[int64]map[string]int64 {
	dic := pd.Dictionary()
	out := map[int64]map[string]int64{}
	for i := 0; i < pd.ResourceProfiles().Len(); i++ {
		rp := pd.ResourceProfiles().At(i)
		pid := pidOf(rp)
		for j := 0; j < rp.ScopeProfiles().Len(); j++ {
			profs := rp.ScopeProfiles().At(j).Profiles()
			for k := 0; k < profs.Len(); k++ {
				foldProfile(dic, profs.At(k), pid, out)
			}
		}
	}
	return out
}

func foldProfile(dic pprofile.ProfilesDictionary, p pprofile.Profile, pid int64,
	out map[int64]map[string]int64) {
	for s := 0; s < p.Samples().Len(); s++ {
		smp := p.Samples().At(s)
		// CPU samples carry one timestamp per sample and no values.
		n := int64(smp.TimestampsUnixNano().Len())
		if n == 0 && smp.Values().Len() > 0 {
			n = smp.Values().At(0)
		}
		si := smp.StackIndex()
		if n <= 0 || si < 0 || int(si) >= dic.StackTable().Len() {
			continue
		}
		idx := dic.StackTable().At(int(si)).LocationIndices()
		frames := make([]string, idx.Len())
		for f := 0; f < idx.Len(); f++ { // leaf first in OTLP; root first folded
			frames[idx.Len()-1-f] = frameName(dic, idx.At(f))
		}
		if out[pid] == nil {
			out[pid] = map[string]int64{}
		}
		out[pid][strings.Join(frames, ";")] += n
	}
}

func (r *receiver) Export(_ context.Context, req pprofileotlp.ExportRequest) (pprofileotlp.ExportResponse, error) {
	byPid := fold(req.Profiles())
	r.mu.Lock()
	defer r.mu.Unlock()
	for pid, stacks := range byPid {
		if err := r.appendFolded(pid, stacks); err != nil {
			log.Printf("receiver: %v", err)
		}
	}
	r.exports++
	log.Printf("receiver: export %d: %d processes", r.exports, len(byPid))
	return pprofileotlp.NewExportResponse(), nil
}

func (r *receiver) appendFolded(pid int64, stacks map[string]int64) error {
	f, err := os.OpenFile(filepath.Join(r.dir, fmt.Sprintf("%d.folded", pid)),
		os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	var b strings.Builder
	for st, n := range stacks {
		fmt.Fprintf(&b, "%s %d\n", st, n)
	}
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func main() {
	addr := flag.String("listen", "127.0.0.1:4317", "address to listen on (loopback)")
	dir := flag.String("dir", ".", "directory for PID.folded files")
	flag.Parse()
	lis, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("receiver: %v", err)
	}
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(64 << 20))
	pprofileotlp.RegisterGRPCServer(srv, &receiver{dir: *dir})
	log.Printf("receiver: listening on %s", lis.Addr())
	if err := srv.Serve(lis); err != nil {
		log.Fatalf("receiver: %v", err)
	}
}
