module github.com/facho-olt/facho/services/poller

go 1.26
