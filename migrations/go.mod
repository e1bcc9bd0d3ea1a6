module github.com/facho-olt/facho/migrations

go 1.26
