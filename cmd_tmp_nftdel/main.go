package main

import (
	"fmt"

	"github.com/google/nftables"
)

func main() {
	c, _ := nftables.New()
	tabs, _ := c.ListTables()
	for _, t := range tabs {
		fmt.Println("table", t.Name, t.Family)
		chs, _ := c.ListChains()
		for _, ch := range chs {
			if ch.Table.Name == t.Name {
				rs, _ := c.GetRules(t, ch)
				fmt.Println(" chain", ch.Name, len(rs))
			}
		}
	}
	c.DelTable(&nftables.Table{Name: "hivecrew", Family: nftables.TableFamilyINet})
	fmt.Println(c.Flush())
}
