package imagetest

// toolSource is the program of Tool.
const toolSource = `package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: tool echo|env|pwd|id|cat|ls|write|sleep|exit ...")
		os.Exit(2)
	}
	args := os.Args[2:]
	switch os.Args[1] {
	case "echo":
		fmt.Println(strings.Join(args, " "))
	case "env":
		for _, e := range os.Environ() {
			fmt.Println(e)
		}
	case "pwd":
		d, err := os.Getwd()
		check(err)
		fmt.Println(d)
	case "id":
		fmt.Printf("%d:%d\n", os.Getuid(), os.Getgid())
	case "cat":
		for _, f := range args {
			b, err := os.ReadFile(f)
			check(err)
			os.Stdout.Write(b)
		}
	case "ls":
		es, err := os.ReadDir(args[0])
		check(err)
		for _, e := range es {
			fmt.Println(e.Name())
		}
	case "write":
		check(os.WriteFile(args[0], []byte(args[1]), 0o644))
	case "sleep":
		s, err := strconv.ParseFloat(args[0], 64)
		check(err)
		time.Sleep(time.Duration(s * float64(time.Second)))
	case "exit":
		n, err := strconv.Atoi(args[0])
		check(err)
		os.Exit(n)
	default:
		fmt.Fprintln(os.Stderr, "tool: unknown command", os.Args[1])
		os.Exit(2)
	}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "tool:", err)
		os.Exit(1)
	}
}
`
