// GORM (gorm.io/gorm with its pgx-based postgres driver) against a server, what
// tests/compat/go.rs runs: AutoMigrate twice (CREATE TABLE, indexes, unique constraints, foreign
// keys, then the information_schema and pg_catalog reads that compare the schema), creates with
// RETURNING, Preload, expression updates, soft deletes, a failing transaction. Prints one line
// per check. Usage: go run . PORT
package main

import (
	"fmt"
	"os"
	"time"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

type Company struct {
	ID   uint
	Name string `gorm:"uniqueIndex;size:100"`
}

type User struct {
	ID        uint `gorm:"primaryKey"`
	Name      string `gorm:"index;not null"`
	Email     *string `gorm:"unique"`
	Age       int
	CompanyID *uint
	Company   Company
	CreatedAt time.Time
	UpdatedAt time.Time
	DeletedAt gorm.DeletedAt `gorm:"index"`
}

func main() {
	dsn := fmt.Sprintf("host=127.0.0.1 port=%s user=postgres dbname=postgres sslmode=disable", os.Args[1])
	db, err := gorm.Open(postgres.Open(dsn), &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
	if err != nil { fmt.Println("ERROR open", err); os.Exit(1) }
	db.Migrator().DropTable(&User{}, &Company{})
	if err := db.AutoMigrate(&Company{}, &User{}); err != nil { fmt.Println("ERROR migrate", err); os.Exit(1) }
	if err := db.AutoMigrate(&Company{}, &User{}); err != nil { fmt.Println("ERROR migrate2", err); os.Exit(1) }
	c := Company{Name: "acme"}
	db.Create(&c)
	e := "a@x.org"
	users := []User{{Name: "ann", Email: &e, Age: 30, CompanyID: &c.ID}, {Name: "bob", Age: 40}}
	if err := db.Create(&users).Error; err != nil { fmt.Println("ERROR create", err); os.Exit(1) }
	var got []User
	db.Preload("Company").Where("age >= ?", 30).Order("name").Find(&got)
	for _, u := range got { fmt.Println("user", u.Name, u.Age, u.Company.Name) }
	db.Model(&User{}).Where("name = ?", "ann").Update("age", gorm.Expr("age + ?", 1))
	db.Delete(&User{}, "name = ?", "bob")
	var n int64
	db.Model(&User{}).Count(&n)
	var all int64
	db.Unscoped().Model(&User{}).Count(&all)
	fmt.Println("count", n, all)
	err = db.Transaction(func(tx *gorm.DB) error {
		return tx.Create(&User{Name: "dup", Email: &e}).Error
	})
	fmt.Println("dup", err != nil)
}
