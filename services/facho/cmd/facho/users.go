package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/dbmigrate"
	"github.com/facho-olt/facho/services/api/auth"
)

// runUsers serves `facho users add NAME --role R` and `facho users list`
// against DATABASE_URL. The password comes from FACHO_USER_PASSWORD or the
// first line of stdin, never from a flag (it would show in ps).
func runUsers(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: facho users add NAME [--role admin|operator|viewer] | facho users list")
	}
	url := getenv("DATABASE_URL")
	if url == "" {
		return errors.New("DATABASE_URL is required")
	}
	open := func() (*pgxpool.Pool, error) {
		db, err := pgxpool.New(ctx, url)
		if err != nil {
			return nil, fmt.Errorf("database: %w", err)
		}
		if err := dbmigrate.Apply(ctx, db, zerolog.Nop()); err != nil {
			db.Close()
			return nil, err
		}
		return db, nil
	}
	switch args[0] {
	case "add":
		fs := flag.NewFlagSet("users add", flag.ContinueOnError)
		fs.SetOutput(stdout)
		role := fs.String("role", "viewer", "admin, operator or viewer")
		if len(args) < 2 || strings.HasPrefix(args[1], "-") {
			return errors.New("usage: facho users add NAME [--role admin|operator|viewer]")
		}
		name := args[1]
		if err := fs.Parse(args[2:]); err != nil {
			return err
		}
		r, err := auth.ParseRole(*role)
		if err != nil {
			return err
		}
		pw := getenv("FACHO_USER_PASSWORD")
		if pw == "" {
			line, err := bufio.NewReader(stdin).ReadString('\n')
			if err != nil && line == "" {
				return errors.New("password: set FACHO_USER_PASSWORD or write it on stdin")
			}
			pw = strings.TrimRight(line, "\r\n")
		}
		db, err := open()
		if err != nil {
			return err
		}
		defer db.Close()
		u, err := (&auth.Store{DB: db}).CreateUser(ctx, name, r, pw)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "user %s (%s) created, id %d\n", u.Username, u.Role, u.ID)
		return nil
	case "list":
		db, err := open()
		if err != nil {
			return err
		}
		defer db.Close()
		users, err := (&auth.Store{DB: db}).Users(ctx)
		if err != nil {
			return err
		}
		for _, u := range users {
			state := "enabled"
			if u.Disabled {
				state = "disabled"
			}
			fmt.Fprintf(stdout, "%-24s %-9s %s\n", u.Username, u.Role, state)
		}
		return nil
	}
	return fmt.Errorf("users %s: unknown (add, list)", args[0])
}
