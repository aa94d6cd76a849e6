// Command cp copies files and directories, as `cp -R [-v] SRC... DST` does.
// OLM's bundle unpack Job runs `/bin/cp -Rv /bin/cpb /util/cpb` in its util
// image; an image built without a distribution needs a cp of its own.
package main

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

func main() {
	opts, args, err := parse(os.Args[1:])
	if err != nil || len(args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: cp [-Rrv] SRC... DST")
		os.Exit(2)
	}
	dst := args[len(args)-1]
	for _, src := range args[:len(args)-1] {
		if err := copyPath(src, target(src, dst, len(args) > 2), opts.recursive, opts.verbose); err != nil {
			fmt.Fprintln(os.Stderr, "cp:", err)
			os.Exit(1)
		}
	}
}

type options struct{ recursive, verbose bool }

// parse reads options as cp does: letters combined or not (-Rv, -R -v),
// until "--" or the first operand.
func parse(argv []string) (options, []string, error) {
	var o options
	for i, a := range argv {
		if a == "--" {
			return o, argv[i+1:], nil
		}
		if len(a) < 2 || a[0] != '-' {
			return o, argv[i:], nil
		}
		for _, c := range a[1:] {
			switch c {
			case 'R', 'r':
				o.recursive = true
			case 'v':
				o.verbose = true
			default:
				return o, nil, fmt.Errorf("unknown option -%c", c)
			}
		}
	}
	return o, nil, nil
}

// target is where src lands: inside dst when dst is a directory (or when
// several sources are copied), else dst itself.
func target(src, dst string, many bool) string {
	if fi, err := os.Stat(dst); many || (err == nil && fi.IsDir()) {
		return filepath.Join(dst, filepath.Base(src))
	}
	return dst
}

func copyPath(src, dst string, recursive, verbose bool) error {
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return copyFile(src, dst, fi.Mode(), verbose)
	}
	if !recursive {
		return fmt.Errorf("%s is a directory (not copied without -R)", src)
	}
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		out := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(out, info.Mode().Perm())
		}
		return copyFile(path, out, info.Mode(), verbose)
	})
}

func copyFile(src, dst string, mode fs.FileMode, verbose bool) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode.Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copying %s to %s: %w", src, dst, err)
	}
	if verbose {
		fmt.Printf("'%s' -> '%s'\n", src, dst)
	}
	return out.Close()
}
