-- The upstream table of examples/data/orders_canal.parquet (TiDB / MySQL).
CREATE DATABASE `shop`;

CREATE TABLE `shop`.`orders` (
  `id` INT NOT NULL,
  `customer` VARCHAR(64) NOT NULL,
  `amount` DECIMAL(12,2) NOT NULL,
  `status` ENUM('pending','paid','shipped','delivered','cancelled') NOT NULL DEFAULT 'pending',
  `note` TEXT NULL,
  `payload` VARBINARY(64) NULL,
  `created_at` DATETIME NOT NULL,
  `updated_at` TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
  `qty` INT UNSIGNED NOT NULL,
  `ship_date` DATE NULL,
  `is_gift` TINYINT(1) NOT NULL DEFAULT 0,
  `tags` SET('gift','express','fragile') NOT NULL DEFAULT '',
  `attrs` JSON NULL,
  PRIMARY KEY (`id`)
);

-- issued later in the stream:
ALTER TABLE `shop`.`orders` ADD INDEX `idx_customer` (`customer`);
