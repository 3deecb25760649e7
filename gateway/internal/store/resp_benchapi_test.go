package store

import (
	"bufio"
	"net"
	"strconv"
)

func newRESPConn(nc net.Conn) *respConn {
	return &respConn{nc: nc, br: bufio.NewReaderSize(nc, respBufSize), bw: bufio.NewWriterSize(nc, respBufSize)}
}

func benchEncodeApply(bw *bufio.Writer, incrs []Incr) {
	cmds := make([][]string, 0, 2*len(incrs))
	for i := 0; i < len(incrs); i++ {
		in := incrs[i]
		cmds = append(cmds, []string{"INCRBY", in.Key, strconv.FormatInt(in.Delta, 10)})
		cmds = append(cmds, []string{"EXPIRE", in.Key, strconv.FormatInt(ttlSeconds(in.TTL), 10)})
	}
	for i := 0; i < len(cmds); i++ {
		_ = writeRESPCommand(bw, cmds[i])
	}
	_ = bw.Flush()
}

func benchParseInts(br *bufio.Reader, n int) error {
	replies := make([]respValue, n)
	for i := 0; i < n; i++ {
		v, err := readRESPReply(br, 0)
		if err != nil {
			return err
		}
		replies[i] = v
	}
	return nil
}
